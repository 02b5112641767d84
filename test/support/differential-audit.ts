/**
 * The real world's writes, read from the kube-apiserver's audit log: every create, patch and delete of
 * a task by anyone, with the object answered (RequestResponse level), and every Event created. The
 * controller runs as its own user, so each write says whose it was. Reads and watches are not logged.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import type { JsonObject, JsonValue } from "../../src/interpreters/memory/merge-patch.ts";
import type { ObservedEvent, ObservedWrite } from "./differential-writes.ts";

/** The user the controller under test runs as (in system:masters). */
export const controllerUser = "opstask-differential";

export interface WriteAudit {
  readonly apiserverArgs: readonly string[];
  /** The writes to tasks in `namespace` so far, in the order the server received them. */
  writesIn(namespace: string): ObservedWrite[];
  /** The Events created in `namespace` so far, in the order the server received them. */
  eventsIn(namespace: string): ObservedEvent[];
}

const isObject = (value: unknown): value is JsonObject =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const verbs: Record<string, ObservedWrite["verb"]> = { create: "create", patch: "patch", delete: "delete" };

/** The completed requests the log holds. */
const audited = (path: string): JsonObject[] =>
  readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line): unknown => JSON.parse(line))
    .filter((event): event is JsonObject => isObject(event) && event.stage === "ResponseComplete");

/** In the order the server received them: a key's requests are sequential, so this is their order. */
const inOrder = <A>(found: ReadonlyArray<{ readonly at: string; readonly entry: A }>): A[] =>
  // Microsecond RFC 3339 times of one width sort as strings.
  [...found].sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0)).map(({ entry }) => entry);

export const writeAudit = (dir: string): WriteAudit => {
  const policy = join(dir, "audit-policy.yaml");
  const path = join(dir, "audit.log");
  writeFileSync(
    policy,
    stringify({
      apiVersion: "audit.k8s.io/v1",
      kind: "Policy",
      omitStages: ["RequestReceived", "ResponseStarted"],
      rules: [
        {
          level: "RequestResponse",
          verbs: Object.keys(verbs),
          resources: [{ group: "druid.gardener.cloud", resources: ["etcdopstasks", "etcdopstasks/status"] }],
        },
        {
          level: "RequestResponse",
          verbs: ["create"],
          resources: [{ group: "events.k8s.io", resources: ["events"] }],
        },
        { level: "None" },
      ],
    }),
  );
  writeFileSync(path, "");
  return {
    apiserverArgs: [
      `--audit-policy-file=${policy}`,
      `--audit-log-path=${path}`,
      "--audit-log-format=json",
      // Each event is in the file before its request is answered.
      "--audit-log-mode=blocking",
    ],
    eventsIn: (namespace) =>
      inOrder(
        audited(path).flatMap((event) => {
          const ref = isObject(event.objectRef) ? event.objectRef : {};
          const created = event.responseObject;
          if (ref.resource !== "events" || ref.namespace !== namespace || !isObject(created)) return [];
          const regarding = isObject(created.regarding) ? created.regarding : {};
          return [
            {
              at: String(event.requestReceivedTimestamp),
              entry: {
                uid: String(regarding.uid),
                eventType: String(created.type),
                reason: String(created.reason),
                note: String(created.note),
              },
            },
          ];
        }),
      ),
    writesIn: (namespace) => {
      const found: Array<{ readonly at: string; readonly entry: ObservedWrite }> = [];
      for (const event of audited(path)) {
        const ref = isObject(event.objectRef) ? event.objectRef : {};
        const verb = verbs[String(event.verb)];
        if (verb === undefined || ref.namespace !== namespace || ref.resource !== "etcdopstasks") continue;
        const user = isObject(event.user) ? event.user.username : undefined;
        const code = isObject(event.responseStatus) ? Number(event.responseStatus.code ?? 0) : 0;
        const answered: JsonValue | undefined = event.responseObject;
        const object =
          isObject(answered) && answered.kind !== "Status" && code < 300 ? { object: answered } : {};
        // A create's name is in the object, not in the request's path.
        const name = String(
          ref.name ?? (isObject(object.object?.metadata) ? object.object.metadata.name : ""),
        );
        found.push({
          at: String(event.requestReceivedTimestamp),
          entry: {
            actor: user === controllerUser ? "ours" : "user",
            verb,
            subresource: ref.subresource === "status" ? "status" : "",
            name,
            code,
            ...object,
          },
        });
      }
      return inOrder(found);
    },
  };
};
