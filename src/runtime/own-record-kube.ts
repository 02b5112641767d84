/**
 * `OwnRecord` on a cluster: one ConfigMap per task, `opstask-record-<task UID>`, in the controller's
 * own namespace (`progressNamespace`). Why there and not on the task: whoever may create or patch a
 * task writes its annotations, and a druid-schema status prunes unknown fields; the controller's
 * namespace is one where task authors hold no rights, so what the record says the controller wrote
 * (docs/security.md, trust model). Keyed by UID, a namesake task never reads another's record.
 *
 * Writes are merge patches of `data`; the first one creates the ConfigMap (a create that meets one
 * made meanwhile patches it). A ConfigMap cannot be owned across namespaces, so the record is removed
 * by the handler's Cleanup (library/steps does it last); its labels name the task for an operator
 * who finds one left behind.
 */
import type { OwnRecord } from "../handlers/handler-context.ts";
import { ObjectsUnavailable } from "../handlers/objects-unavailable.ts";
import type { EventSubject } from "../interpreters/kubernetes/event-recorder.ts";
import { apiPath } from "../kube/api-path.ts";
import { mergePatch } from "../kube/client.ts";
import { ApiCallError, type KubeClient } from "../kube/kube-client.ts";

const configMaps = { group: "", version: "v1", plural: "configmaps" };

/** The ConfigMap that holds a task's record. */
export const ownRecordName = (uid: string): string => `opstask-record-${uid}`;

/** The label that names the task a record is about (its UID). */
export const ownRecordTaskLabel = "opstask.gardener.cloud/task-uid";

const statusOf = (error: unknown) => (error instanceof ApiCallError ? error.statusCode : 0);

/** An unanswered request, 429 or 5xx is an outage (a retry); anything else an Error naming the call. */
export const callFailed = (path: string, doing: string, error: unknown): Error => {
  const status = statusOf(error);
  const reason = error instanceof Error ? error.message : String(error);
  return status === 0 || status === 429 || status >= 500
    ? new ObjectsUnavailable(path, `${doing} ${path} failed: ${reason}`, { cause: error })
    : new Error(`${doing} ${path} failed: ${reason}`, { cause: error });
};

/** The string-valued entries of `value[key]` (annotations, a ConfigMap's data) of an object as the API returned it. */
export const stringsAt = (value: unknown, key: string): Readonly<Record<string, string>> => {
  const field =
    typeof value === "object" && value !== null && key in value
      ? (value as Record<string, unknown>)[key]
      : undefined;
  if (typeof field !== "object" || field === null) return {};
  return Object.fromEntries(
    Object.entries(field).filter((entry): entry is [string, string] => typeof entry[1] === "string"),
  );
};

const dataOf = (body: unknown) => stringsAt(body, "data");

export const kubeOwnRecord = (
  client: KubeClient,
  namespace: string,
  subject: EventSubject,
  kind: string,
  signal?: AbortSignal,
): OwnRecord => {
  const name = ownRecordName(subject.uid);
  const path = apiPath(configMaps, namespace, name);
  const create = async (fields: Readonly<Record<string, string | null>>) => {
    const data = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== null));
    const body = {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: {
        name,
        namespace,
        labels: { "app.kubernetes.io/managed-by": "opstask", [ownRecordTaskLabel]: subject.uid },
        annotations: { "opstask.gardener.cloud/task": `${kind} ${subject.namespace}/${subject.name}` },
      },
      data,
    };
    const response = await client.request(
      { method: "POST", path: apiPath(configMaps, namespace), body },
      signal,
    );
    return dataOf(response.body);
  };
  const patch = async (fields: Readonly<Record<string, string | null>>) => {
    const response = await client.request(
      { method: "PATCH", path, contentType: mergePatch, body: { data: fields } },
      signal,
    );
    return dataOf(response.body);
  };
  return {
    read: async () => {
      try {
        return dataOf((await client.request({ method: "GET", path }, signal)).body);
      } catch (error) {
        if (statusOf(error) === 404) return undefined;
        throw callFailed(path, "reading", error);
      }
    },
    write: async (fields) => {
      try {
        try {
          return await patch(fields);
        } catch (error) {
          if (statusOf(error) !== 404) throw error;
        }
        try {
          return await create(fields);
        } catch (error) {
          // Made meanwhile by an earlier call of this task: patch that one.
          if (statusOf(error) !== 409) throw error;
          return await patch(fields);
        }
      } catch (error) {
        throw callFailed(path, "writing", error);
      }
    },
    remove: async () => {
      try {
        await client.request({ method: "DELETE", path }, signal);
      } catch (error) {
        if (statusOf(error) !== 404) throw callFailed(path, "deleting", error);
      }
    },
  };
};
