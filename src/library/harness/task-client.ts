/**
 * A client for one task kind on a real API server, for an operator's tests, scripts and tools:
 * `create` takes a manifest whose `spec` has the kind's (encoded) spec type, as `simulate`'s does;
 * `get`, `list` and `waitFor` answer each task as `TaskRecord` (the decoded task, its status, result
 * and conditions), the readers a simulation has. Over any `KubeClient` (`loadKubeClient()`,
 * `ControlPlane.kubeClient()`); rejects with the client's `ApiCallError` for a refused call.
 */
import type { TaskCondition, TaskState, TaskStatus } from "../../api/status.ts";
import { ApiCallError, type KubeClient } from "../../kube/kube-client.ts";
import { readTask, type TaskKind } from "../../reconcile/task-kind.ts";
import type { TaskManifest } from "../simulate.ts";
import { storedConditions, storedResult } from "./stored-status.ts";

/** One stored task as a test reads it. */
export interface TaskRecord<Task> {
  readonly name: string;
  /** The task as the controller decodes it; undefined when it does not decode (see `invalid`). */
  readonly task: Task | undefined;
  /** Why it does not decode, one line per problem; empty when it does. */
  readonly invalid: ReadonlyArray<string>;
  readonly state: TaskState | undefined;
  readonly status: TaskStatus;
  /** `status.result` as stored (JSON). */
  readonly result: unknown;
  readonly conditions: ReadonlyArray<TaskCondition>;
  /** The object as the API server returned it. */
  readonly object: unknown;
}

export interface TaskClientOptions {
  /** Where the tasks are (default `default`). */
  readonly namespace?: string;
}

export interface WaitOptions {
  /** Give up after this long (default 60 s), rejecting with what was waited for and the last record. */
  readonly timeoutMs?: number;
  /** Between two reads (default 250 ms). */
  readonly intervalMs?: number;
}

export interface TaskClient<Task, Spec = unknown> {
  create(manifest: TaskManifest<Spec>): Promise<TaskRecord<Task>>;
  /** Any manifest, e.g. one the kind's schema refuses, to see what the CRD or the controller does with it. */
  readonly createUnchecked: (manifest: TaskManifest) => Promise<TaskRecord<Task>>;
  /** Undefined when there is no such task. */
  readonly get: (name: string) => Promise<TaskRecord<Task> | undefined>;
  readonly list: () => Promise<ReadonlyArray<TaskRecord<Task>>>;
  /** A user's delete; false when there was no such task. The finalizer keeps it until its cleanup ran. */
  readonly delete: (name: string) => Promise<boolean>;
  /**
   * Reads the task until `until` holds (its argument undefined while the task does not exist) or a
   * state such as `"Succeeded"` is reached; resolves with the last read.
   */
  readonly waitFor: (
    name: string,
    until: TaskState | ((record: TaskRecord<Task> | undefined) => boolean),
    options?: WaitOptions,
  ) => Promise<TaskRecord<Task> | undefined>;
}

const isNotFound = (error: unknown): boolean => error instanceof ApiCallError && error.statusCode === 404;

const itemsOf = (body: unknown): ReadonlyArray<unknown> => {
  const items = typeof body === "object" && body !== null ? Reflect.get(body, "items") : undefined;
  return Array.isArray(items) ? items : [];
};

export const taskClient = <Task, Spec = unknown>(
  kind: TaskKind<Task, Spec>,
  kube: KubeClient,
  options: TaskClientOptions = {},
): TaskClient<Task, Spec> => {
  const { group, version, kind: kindName, plural } = kind.resource;
  const namespace = options.namespace ?? "default";
  const collection = `/apis/${group}/${version}/namespaces/${namespace}/${plural}`;

  const recordOf = (object: unknown): TaskRecord<Task> => {
    const read = readTask(kind, object);
    const metadata =
      typeof object === "object" && object !== null ? Reflect.get(object, "metadata") : undefined;
    const name =
      typeof metadata === "object" && metadata !== null ? Reflect.get(metadata, "name") : undefined;
    return {
      name: typeof name === "string" ? name : "",
      task: read?.task,
      invalid: read?.facts.invalid ?? [],
      state: read?.facts.status.state,
      status: read?.facts.status ?? {},
      result: storedResult(object),
      conditions: storedConditions(object) ?? [],
      object,
    };
  };

  const get = async (name: string): Promise<TaskRecord<Task> | undefined> =>
    kube.request({ method: "GET", path: `${collection}/${name}` }).then(
      ({ body }) => recordOf(body),
      (error: unknown) => (isNotFound(error) ? undefined : Promise.reject(error)),
    );

  const waitFor: TaskClient<Task, Spec>["waitFor"] = async (name, until, wait = {}) => {
    const holds =
      typeof until === "function" ? until : (record: TaskRecord<Task> | undefined) => record?.state === until;
    const what = typeof until === "function" ? "the condition" : `state ${until}`;
    const timeoutMs = wait.timeoutMs ?? 60_000;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const record = await get(name);
      if (holds(record)) return record;
      if (Date.now() >= deadline)
        throw new Error(
          `${kindName} ${namespace}/${name}: ${what} not reached in ${timeoutMs} ms; last: ${
            record === undefined ? "no such task" : JSON.stringify(record.status)
          }`,
        );
      await new Promise((resolve) => setTimeout(resolve, wait.intervalMs ?? 250));
    }
  };

  const create = async (manifest: TaskManifest): Promise<TaskRecord<Task>> => {
    const { body } = await kube.request({
      method: "POST",
      path: collection,
      body: { apiVersion: `${group}/${version}`, kind: kindName, ...manifest },
    });
    return recordOf(body);
  };

  return {
    create,
    createUnchecked: create,
    get,
    list: async () => itemsOf((await kube.request({ method: "GET", path: collection })).body).map(recordOf),
    delete: (name) =>
      kube.request({ method: "DELETE", path: `${collection}/${name}` }).then(
        () => true,
        (error: unknown) => (isNotFound(error) ? false : Promise.reject(error)),
      ),
    waitFor,
  };
};
