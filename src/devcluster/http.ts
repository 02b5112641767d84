// Minimal HTTP(S) requests for readiness probes (before a KubeConfig is worth building) and etcd's JSON
// gateway behind a client certificate (fetch cannot present one).
import { request as httpsRequest } from "node:https";
import { http } from "../node-http.ts";
import type { PemPair } from "./certificates.ts";

export interface ProbeResponse {
  readonly status: number;
  readonly body: string;
}

export interface ProbeOptions {
  /** GET by default; a POST sends `body`. */
  readonly body?: string;
  readonly caPem?: string;
  readonly token?: string;
  /** Presented to a server that requires client certificates. */
  readonly clientCertificate?: PemPair;
  readonly timeoutMs?: number;
}

export function probe(url: string, options: ProbeOptions = {}): Promise<ProbeResponse> {
  const target = new URL(url);
  const request = target.protocol === "https:" ? httpsRequest : http.request;
  const headers: Record<string, string> = {};
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  return new Promise((resolve, reject) => {
    const req = request(
      target,
      {
        method: options.body === undefined ? "GET" : "POST",
        headers,
        timeout: options.timeoutMs ?? 2000,
        ...(options.caPem !== undefined ? { ca: options.caPem } : {}),
        ...(options.clientCertificate !== undefined
          ? { cert: options.clientCertificate.certPem, key: options.clientCertificate.keyPem }
          : {}),
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          if (body.length < 64 * 1024) body += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        res.on("error", reject);
      },
    );
    req.on("timeout", () =>
      req.destroy(new Error(`${options.body === undefined ? "GET" : "POST"} ${url}: timed out`)),
    );
    req.on("error", reject);
    req.end(options.body);
  });
}
