/**
 * A small HTTP proxy in front of the kube-apiserver for the fault suite (bench/faults.ts): the
 * controller talks plain HTTP to it on 127.0.0.1 (its kubeconfig carries the bearer token), and it
 * forwards every request over HTTPS to the apiserver, watch streams included. It records each request
 * (time, method, path, watch or not, answer) so that the suite can tell one controller's writes from
 * another's, and it injects faults:
 *
 * - `throttle(share)`: answers that share of requests (watches included) with 429 and `Retry-After: 1`,
 *   as API Priority and Fairness does when a priority level's queues are full;
 * - `holdWatches()`: ends every open watch stream and keeps new watch requests waiting, unanswered,
 *   until `release()` forwards them (so that objects can change, and etcd be compacted, while nobody
 *   watches: the released watches then start from an expired resourceVersion).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { forwardToApiserver } from "../test/support/apiserver-forward.ts";

export interface ProxiedRequest {
  readonly at: number;
  readonly method: string;
  readonly path: string;
  readonly watch: boolean;
  /** The answer's status; 0 when none came (upstream unreachable, or cut). */
  code: number;
}

export interface FaultProxy {
  readonly url: string;
  readonly requests: ReadonlyArray<ProxiedRequest>;
  throttle(share: number): void;
  holdWatches(): void;
  /** Watch requests waiting while held. */
  held(): number;
  release(): void;
  close(): Promise<void>;
}

export const startFaultProxy = async (upstream: string, caPem: string): Promise<FaultProxy> => {
  const target = new URL(upstream);
  const requests: ProxiedRequest[] = [];
  const openWatches = new Set<ServerResponse>();
  let throttleShare = 0;
  let holding = false;
  const waiting: Array<() => void> = [];

  const forward = (incoming: IncomingMessage, outgoing: ServerResponse, record: ProxiedRequest): void =>
    forwardToApiserver(target, caPem, incoming, outgoing, (answer) => {
      record.code = answer.statusCode ?? 0;
      outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(outgoing);
      answer.on("error", () => outgoing.destroy());
      answer.on("aborted", () => outgoing.destroy());
    });

  const server: Server = createServer((incoming, outgoing) => {
    const url = new URL(incoming.url ?? "/", "http://proxy");
    const record: ProxiedRequest = {
      at: Date.now(),
      method: incoming.method ?? "",
      path: url.pathname,
      watch: url.searchParams.get("watch") === "true",
      code: 0,
    };
    requests.push(record);
    if (throttleShare > 0 && Math.random() < throttleShare) {
      record.code = 429;
      incoming.resume();
      outgoing.writeHead(429, { "content-type": "application/json", "retry-after": "1" }).end(
        JSON.stringify({
          kind: "Status",
          apiVersion: "v1",
          status: "Failure",
          reason: "TooManyRequests",
          message: "too many requests, please try again later",
          code: 429,
          details: { retryAfterSeconds: 1 },
        }),
      );
      return;
    }
    if (!record.watch) {
      forward(incoming, outgoing, record);
      return;
    }
    const start = () => {
      if (outgoing.destroyed || incoming.destroyed) return; // the client gave up while held
      openWatches.add(outgoing);
      outgoing.on("close", () => openWatches.delete(outgoing));
      forward(incoming, outgoing, record);
    };
    if (holding) waiting.push(start);
    else start();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    throttle: (share) => {
      throttleShare = share;
    },
    holdWatches: () => {
      holding = true;
      for (const watch of openWatches) watch.destroy();
    },
    held: () => waiting.length,
    release: () => {
      holding = false;
      for (const start of waiting.splice(0)) start();
    },
    close: async () => {
      holding = false;
      waiting.length = 0;
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};
