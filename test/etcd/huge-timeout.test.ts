/**
 * Security finding 8 (issue 16): a timeout above ~24.8 days overflowed Node's timer, which then fired
 * after 1 ms: every call "timed out" at once and the task retried for ever, holding its Etcd's
 * admission slot. Timeouts are int32 seconds in the CRD, so 2,147,483,647 s must work like any other.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Effect } from "effect";
import { afterEach, describe, expect, it } from "vitest";
import { makeNodeEtcdGateway } from "../../src/etcd/etcd-client.ts";
import { MaxTimerDelayMs, timerDelayMs } from "../../src/timer-limit.ts";
import { etcdObject, run, taskOf, world } from "./support/fixtures.ts";

const hugeMs = 2_147_483_647 * 1000;
let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
  server = undefined;
});

/** Answers every request with `body` after 100 ms. */
const slowServer = async (body: string): Promise<number> => {
  server = createServer((request, response) => {
    request.resume();
    setTimeout(() => response.writeHead(200, { "content-type": "application/json" }).end(body), 100);
  });
  await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
};

describe("timeouts beyond a Node timer's range (finding 8)", () => {
  it("a snapshot with a 2^31-1 s timeout waits for the sidecar's answer", async () => {
    const port = await slowServer("{}");
    const outcome = await run("execute", taskOf(), world([["etcd", etcdObject({ port })]]), {
      timeoutMs: () => hugeMs,
    });
    expect(outcome).toEqual({ kind: "completed", description: "Snapshot created successfully" });
  });

  it("an etcd call with a 2^31-1 s timeout waits for etcd's answer", async () => {
    const port = await slowServer(
      JSON.stringify({ header: { revision: "7" }, dbSize: "10", dbSizeInUse: "5" }),
    );
    const status = await Effect.runPromise(
      makeNodeEtcdGateway().status({ url: `http://127.0.0.1:${port}`, timeoutMs: hugeMs }),
    );
    expect(status.dbSize).toBe(10);
  });

  it("every timer delay is clamped into a Node timer's range, never to 'now'", () => {
    expect([hugeMs, Number.POSITIVE_INFINITY, 5_000, -3, Number.NaN].map(timerDelayMs)).toEqual([
      MaxTimerDelayMs,
      MaxTimerDelayMs,
      5_000,
      0,
      0,
    ]);
  });
});
