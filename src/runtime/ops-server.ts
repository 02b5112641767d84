/**
 * The controller's operational endpoints on plain node:http: `/metrics` (Prometheus text format),
 * `/healthz` (the process answers) and `/readyz` (caches synced, and leading or a healthy standby).
 * One server per address; the metrics and probe addresses may be the same.
 */
import type { Server } from "node:http";
import type { Registry } from "prom-client";
import { http } from "../node-http.ts";

export interface OpsEndpoints {
  readonly registry?: Registry;
  /** Undefined when ready, else why not. */
  readonly notReady?: () => string | undefined;
}

/** `:8080`, `0.0.0.0:8080`, `[::1]:8080` → host and port; `0` → off. */
export const parseAddress = (address: string): { host: string; port: number } | undefined => {
  if (address === "0") return undefined;
  const at = address.lastIndexOf(":");
  const host = address.slice(0, at).replace(/^\[|\]$/g, "");
  return { host: host === "" ? "0.0.0.0" : host, port: Number(address.slice(at + 1)) };
};

export const startOpsServer = async (
  address: string,
  endpoints: OpsEndpoints,
): Promise<Server | undefined> => {
  const target = parseAddress(address);
  if (target === undefined) return undefined;
  const server = http.createServer((request, response) => {
    const path = (request.url ?? "/").split("?")[0];
    if (path === "/healthz") {
      response.writeHead(200, { "content-type": "text/plain" }).end("ok\n");
    } else if (path === "/readyz" && endpoints.notReady !== undefined) {
      const reason = endpoints.notReady();
      response
        .writeHead(reason === undefined ? 200 : 503, { "content-type": "text/plain" })
        .end(`${reason ?? "ok"}\n`);
    } else if (path === "/metrics" && endpoints.registry !== undefined) {
      const registry = endpoints.registry;
      registry.metrics().then(
        (text) => response.writeHead(200, { "content-type": registry.contentType }).end(text),
        (error: unknown) =>
          response.writeHead(500, { "content-type": "text/plain" }).end(`${String(error)}\n`),
      );
    } else {
      response.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(target.port, target.host, () => resolve());
  });
  return server;
};
