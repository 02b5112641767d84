/**
 * Before `runTaskController` starts watching: is the cluster there, and does it serve the task
 * resource? One API discovery request (`GET /apis/<group>/<version>`), transport failures retried until
 * the timeout, so a booting cluster gets its chance and a missing CRD or an absent cluster gets a clear
 * error instead of a start that waits forever for a cache that cannot fill.
 */
import { ApiCallError, type KubeClient } from "../kube/kube-client.ts";
import type { ResourceRef } from "../reconcile/task-kind.ts";

export type StartFailure = "CrdNotInstalled" | "Unreachable" | "Refused" | "NotSynced";

/** Why a task controller did not start; `message` says what to do. */
export class TaskControllerStartError extends Error {
  readonly reason: StartFailure;
  constructor(reason: StartFailure, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "TaskControllerStartError";
    this.reason = reason;
  }
}

export interface ServedCheck {
  readonly client: KubeClient;
  readonly resource: ResourceRef;
  readonly timeoutMs: number;
  /** How the user installs the CRD (the end of the error's `kubectl apply -f …`). */
  readonly crdManifest?: string;
  /** Aborts the wait (the controller is stopped while starting). */
  readonly signal?: AbortSignal;
}

const retryEveryMs = 1_000;

const resourcesOf = (body: unknown): ReadonlyArray<string> => {
  const resources =
    typeof body === "object" && body !== null && "resources" in body ? body.resources : undefined;
  return Array.isArray(resources)
    ? resources.flatMap((entry: unknown) =>
        typeof entry === "object" && entry !== null && "name" in entry && typeof entry.name === "string"
          ? [entry.name]
          : [],
      )
    : [];
};

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });

/** Resolves when the resource is served; rejects with a `TaskControllerStartError` saying why not. */
export const checkServed = async (check: ServedCheck): Promise<void> => {
  const { client, resource } = check;
  const crd = `${resource.plural}.${resource.group}`;
  const notInstalled = () =>
    new TaskControllerStartError(
      "CrdNotInstalled",
      `the CRD ${crd} is not installed: kubectl apply -f ${check.crdManifest ?? "<its manifest>"} (\`opstask crd\` prints one from the kind's schema)`,
    );
  const path = `/apis/${encodeURIComponent(resource.group)}/${encodeURIComponent(resource.version)}`;
  const deadline = Date.now() + check.timeoutMs;
  let last: unknown;
  while (Date.now() < deadline && check.signal?.aborted !== true) {
    const left = Math.max(1, deadline - Date.now());
    const signal = AbortSignal.any([AbortSignal.timeout(left), ...(check.signal ? [check.signal] : [])]);
    try {
      const response = await client.request({ method: "GET", path }, signal);
      if (resourcesOf(response.body).includes(resource.plural)) return;
      throw notInstalled();
    } catch (error) {
      if (error instanceof TaskControllerStartError) throw error;
      const status = error instanceof ApiCallError ? error.statusCode : 0;
      if (status === 404) throw notInstalled();
      if (status !== 0 && status < 500)
        throw new TaskControllerStartError(
          "Refused",
          `the cluster at ${client.server} refused to list ${resource.group}/${resource.version} (HTTP ${status}): check the credentials and RBAC of the kubeconfig`,
          { cause: error },
        );
      last = error;
    }
    await sleep(Math.min(retryEveryMs, Math.max(0, deadline - Date.now())), check.signal);
  }
  if (check.signal?.aborted === true) throw check.signal.reason;
  const reason = last instanceof Error ? last.message : String(last ?? "no answer");
  throw new TaskControllerStartError(
    "Unreachable",
    `the cluster at ${client.server} did not answer within ${Math.round(check.timeoutMs / 1000)} s (${reason}): check the kubeconfig's server and that the cluster runs, or raise startTimeoutMs`,
    { cause: last },
  );
};
