/**
 * client-node 2.0.1 builds a new undici Agent for every request (`KubeConfig.applySecurityAuthentication`
 * → `createDispatcher`), so every API call opens a new TCP and TLS connection: measured by
 * bench/cluster.ts as most of the controller's CPU per task. This keeps one dispatcher per cluster and
 * TLS identity for a KubeConfig, so requests reuse kept-alive connections, as client-go does.
 *
 * Hand-written: it patches one (private) method of the KubeConfig instance; when client-node changes
 * that method, the patch steps aside and requests work as before.
 */
import { createHash } from "node:crypto";
import type { AgentOptions } from "node:https";
import type { KubeConfig } from "@kubernetes/client-node";

const patched = Symbol.for("opstask.sharedConnections");

const fingerprint = (cluster: unknown, options: AgentOptions): string => {
  const server =
    typeof cluster === "object" && cluster !== null && "server" in cluster ? String(cluster.server) : "";
  const hash = createHash("sha256");
  for (const part of [
    server,
    options.ca,
    options.cert,
    options.key,
    options.pfx,
    options.servername,
    options.rejectUnauthorized,
  ]) {
    hash.update(
      part === undefined
        ? "-"
        : typeof part === "string" || Buffer.isBuffer(part)
          ? part
          : JSON.stringify(part),
    );
    hash.update("\0");
  }
  return hash.digest("hex");
};

/** Makes `kubeConfig` reuse connections across requests (idempotent); returns it. */
export const shareConnections = (kubeConfig: KubeConfig): KubeConfig => {
  if (Reflect.get(kubeConfig, patched) === true) return kubeConfig;
  const create: unknown = Reflect.get(kubeConfig, "createDispatcher");
  if (typeof create !== "function") return kubeConfig;
  const dispatchers = new Map<string, unknown>();
  Reflect.set(kubeConfig, "createDispatcher", (cluster: unknown, options: AgentOptions): unknown => {
    const key = fingerprint(cluster, options);
    if (!dispatchers.has(key)) dispatchers.set(key, create.call(kubeConfig, cluster, options));
    return dispatchers.get(key);
  });
  Reflect.set(kubeConfig, patched, true);
  return kubeConfig;
};
