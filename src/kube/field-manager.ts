/**
 * A client whose writes name a given field manager, whatever client it wraps: a library user's
 * controller writes as its own (`fieldManager: "backup-verifier"`), so that `metadata.managedFields`
 * tells its writes from opstask's, the CLI's and a user's.
 */
import type { ApiRequest, KubeClient } from "./kube-client.ts";
import { type KubeAccess, kubeClientOf } from "./kube-client-node.ts";

const writes: ReadonlySet<ApiRequest["method"]> = new Set(["POST", "PATCH", "PUT"]);

/** `client` with `fieldManager` on every write that does not name one itself. */
export const withFieldManager = (access: KubeAccess, fieldManager: string): KubeClient => {
  const client = kubeClientOf(access, fieldManager);
  return {
    ...client,
    request: (request, signal) =>
      client.request(
        writes.has(request.method) && request.query?.fieldManager === undefined
          ? { ...request, query: { ...request.query, fieldManager } }
          : request,
        signal,
      ),
  };
};
