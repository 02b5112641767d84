/**
 * A `KubeClient` that authenticates through a client-node `KubeConfig`: whatever that KubeConfig can do
 * (exec plugins, OIDC, cloud auth providers) applies to our requests, since it fills in the TLS options
 * and headers of each one. Only types are imported from client-node: the caller already loaded it.
 */
import type { RequestOptions } from "node:https";
import { isKubeClient, type KubeClient, makeKubeClient } from "./kube-client.ts";

/**
 * The two methods of a client-node `KubeConfig` used here. Structural rather than client-node's own
 * type, so that opstask's public types do not load client-node's (which need `ws`'s types: TS7016
 * for every user who type-checks libraries).
 */
export interface KubeConfigLike {
  getCurrentCluster(): { readonly server: string } | null;
  applyToHTTPSOptions(options: RequestOptions): Promise<void>;
}

/** What the controller accepts as its cluster: opstask's lean client, or a client-node KubeConfig. */
export type KubeAccess = KubeClient | KubeConfigLike;

const asBuffer = (value: unknown): Buffer | undefined =>
  Buffer.isBuffer(value) ? value : typeof value === "string" ? Buffer.from(value) : undefined;

/** One client per KubeConfig and field manager, so that its requests share connections. */
const clients = new WeakMap<KubeConfigLike, Map<string | undefined, KubeClient>>();

/** `fieldManager`: see `KubeClientSource` (default `opstask`); a `KubeClient` keeps its own. */
export const kubeClientOf = (access: KubeAccess, fieldManager?: string): KubeClient => {
  if (isKubeClient(access)) return access;
  const known = clients.get(access)?.get(fieldManager);
  if (known !== undefined) return known;
  const server = access.getCurrentCluster()?.server;
  if (server === undefined || server === "")
    throw new Error("the KubeConfig has no current cluster with a server; load a kubeconfig into it first");
  const client = makeKubeClient({
    server,
    ...(fieldManager === undefined ? {} : { fieldManager }),
    credentials: async () => {
      const options: RequestOptions = { headers: {} };
      await access.applyToHTTPSOptions(options);
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(options.headers ?? {}))
        if (typeof value === "string") headers[name] = value;
      if (typeof options.auth === "string" && headers.Authorization === undefined)
        headers.Authorization = `Basic ${Buffer.from(options.auth).toString("base64")}`;
      return {
        ca: asBuffer(options.ca),
        cert: asBuffer(options.cert),
        key: asBuffer(options.key),
        rejectUnauthorized: options.rejectUnauthorized,
        servername: options.servername,
        headers,
      };
    },
  });
  const byManager = clients.get(access) ?? new Map<string | undefined, KubeClient>();
  byManager.set(fieldManager, client);
  clients.set(access, byManager);
  return client;
};
