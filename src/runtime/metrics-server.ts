/**
 * Where /metrics is served. Secure mode (`--metrics-secure`, the default) is controller-runtime's
 * secure metrics serving: HTTPS with the given certificate files or a self-signed certificate made at
 * start, and every request authenticated (TokenReview) and authorised (SubjectAccessReview for
 * `get /metrics`) by the kube-apiserver (src/runtime/metrics-access.ts). Only `/metrics` is served there.
 * `--metrics-secure=false` serves plain HTTP without authentication, as etcd-druid does; the probes
 * are always plain HTTP without authentication on their own address (the kubelet probes the pod IP and
 * presents no token), serving only /healthz and /readyz.
 *
 * Certificate files are read again when they change (checked every 30 s), so a rotated certificate
 * (cert-manager, a mounted Secret) is picked up without a restart.
 */
import { readFileSync, statSync } from "node:fs";
import type { Server as HttpServer } from "node:http";
import { createServer, type Server as HttpsServer } from "node:https";
import { hostname } from "node:os";
import { Counter, type Registry } from "prom-client";
import type { KubeClient } from "../kube/kube-client.ts";
import type { RequestCounter } from "../kube/request-metrics.ts";
import { type MetricsAccess, makeMetricsAccess } from "./metrics-access.ts";
import { parseAddress, startOpsServer } from "./ops-server.ts";
import { selfSignedCertificate } from "./self-signed-certificate.ts";

export interface MetricsServerOptions {
  readonly address: string;
  readonly secure: boolean;
  /** PEM files; both or neither (then a self-signed certificate is made). */
  readonly certFile: string;
  readonly keyFile: string;
  readonly registry: Registry;
  /** For TokenReviews and SubjectAccessReviews in secure mode. */
  readonly client: KubeClient;
  readonly counter?: RequestCounter;
  /** How often certificate files are checked for a change; default 30 s. */
  readonly reloadIntervalMs?: number;
}

const answers: Record<Exclude<MetricsAccess["_tag"], "Allowed">, [number, string]> = {
  Unauthenticated: [401, "Unauthorized"],
  Forbidden: [403, "Forbidden"],
  Unavailable: [500, "Internal Server Error"],
  Busy: [429, "Too Many Requests"],
};

interface KeyPair {
  readonly cert: string;
  readonly key: string;
}

const readPair = (certFile: string, keyFile: string): KeyPair => ({
  cert: readFileSync(certFile, "utf8"),
  key: readFileSync(keyFile, "utf8"),
});

const modified = (file: string): number => {
  try {
    return statSync(file).mtimeMs;
  } catch {
    return 0;
  }
};

/** Starts the metrics listener, or nothing for address `0`. Closing the server stops everything. */
export const startMetricsServer = async (
  options: MetricsServerOptions,
): Promise<HttpServer | HttpsServer | undefined> => {
  const target = parseAddress(options.address);
  if (target === undefined) return undefined;
  if (!options.secure) return startOpsServer(options.address, { registry: options.registry });
  const fromFiles = options.certFile !== "";
  const pair: KeyPair = fromFiles
    ? readPair(options.certFile, options.keyFile)
    : (() => {
        const made = selfSignedCertificate([hostname(), "localhost", "127.0.0.1", "::1"]);
        return { cert: made.certPem, key: made.keyPem };
      })();
  const access = makeMetricsAccess({
    client: options.client,
    ...(options.counter === undefined ? {} : { counter: options.counter }),
  });
  const outcomes = new Counter({
    name: "opstask_metrics_requests_total",
    help: "Requests for /metrics in secure mode, by what authentication and authorization decided",
    labelNames: ["result"],
    registers: [options.registry],
  });
  const server = createServer({ ...pair, minVersion: "TLSv1.2" }, (request, response) => {
    const path = (request.url ?? "/").split("?")[0];
    if (path !== "/metrics" || request.method !== "GET") {
      response.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
      return;
    }
    void access.check(request.headers.authorization).then((decision) => {
      outcomes.inc({ result: decision._tag });
      if (decision._tag !== "Allowed") {
        const [status, text] = answers[decision._tag];
        response
          .writeHead(status, {
            "content-type": "text/plain",
            ...(status === 401 ? { "www-authenticate": "Bearer" } : {}),
            ...(status === 429 ? { "retry-after": "1" } : {}),
          })
          .end(`${text}\n`);
        return;
      }
      options.registry.metrics().then(
        (body) => response.writeHead(200, { "content-type": options.registry.contentType }).end(body),
        () => response.writeHead(500, { "content-type": "text/plain" }).end("Internal Server Error\n"),
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(target.port, target.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  if (fromFiles) {
    let seen = [modified(options.certFile), modified(options.keyFile)];
    // Periodic on purpose (30 s by default), and only with certificate files: a renewed pair is served
    // without a restart.
    const reload = setInterval(() => {
      const now = [modified(options.certFile), modified(options.keyFile)];
      if (now[0] === seen[0] && now[1] === seen[1]) return;
      try {
        server.setSecureContext({ ...readPair(options.certFile, options.keyFile), minVersion: "TLSv1.2" });
        seen = now;
      } catch {
        // A half-written pair (the certificate renewed, the key not yet): keep serving the old one and
        // try again at the next tick.
      }
    }, options.reloadIntervalMs ?? 30_000);
    reload.unref();
    server.once("close", () => clearInterval(reload));
  }
  return server;
};
