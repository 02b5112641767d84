// /readyz of `opstask controller` reflects a lost API connection after a grace period, and the fault
// metrics are exported with closed label sets.
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { FaultCounter } from "../../src/interpreters/kubernetes/fault-counter.ts";
import { ContactCounter } from "../../src/runtime/api-contact.ts";
import { makeControllerMetrics } from "../../src/runtime/metrics.ts";
import { startOpsServer } from "../../src/runtime/ops-server.ts";
import { apiLostGraceMs, notReadyReason } from "../../src/runtime/readiness.ts";

const idleQueue = {
  depth: 0,
  inFlight: 0,
  delayed: 0,
  adds: 0,
  deduplicated: 0,
  started: 0,
  processed: 0,
  failures: 0,
  waitTotalMs: 0,
  waitMaxMs: 0,
  processingTotalMs: 0,
};

/** A ContactCounter on a clock the test moves. */
const onClock = () => {
  let now = 1_000_000;
  const counter = new ContactCounter(() => now);
  const advance = (ms: number): void => {
    now += ms;
  };
  return { counter, advance };
};

const synced = { leading: true, synced: 1, caches: 1 };

describe("API contact", () => {
  it("is lost from the first unanswered request after the last answered one, and back with the next answer", () => {
    const { counter, advance } = onClock();
    counter.record("watch", 200);
    advance(60_000); // an open watch, no requests: still in contact
    expect(counter.lostForMs()).toBe(0);
    counter.record("watch", 0);
    advance(10_000);
    counter.record("list", 503);
    advance(10_000);
    counter.record("get", 0);
    expect(counter.lostForMs()).toBe(20_000);
    counter.record("get", 403); // an answer: the server is there
    expect(counter.lostForMs()).toBe(0);
  });

  it("404, 409 and 429 are answers; no answer (0) and 5xx are not", () => {
    for (const [code, lost] of [
      [404, false],
      [409, false],
      [429, false],
      [0, true],
      [500, true],
      [504, true],
    ] as const) {
      const { counter, advance } = onClock();
      counter.record("patch", code);
      advance(1);
      expect(counter.lostForMs() > 0, `code ${code}`).toBe(lost);
    }
  });
});

describe("readiness", () => {
  it("a synced leader turns not ready once the API server has not answered for the grace period", () => {
    const { counter, advance } = onClock();
    const reason = () => notReadyReason({ ...synced, apiLostForMs: counter.lostForMs() });
    counter.record("watch", 200);
    expect(reason()).toBeUndefined();
    counter.record("watch", 0);
    advance(apiLostGraceMs - 1);
    expect(reason()).toBeUndefined();
    advance(1);
    expect(reason()).toBe("no answer from the API server for 30 s");
    counter.record("list", 200);
    expect(reason()).toBeUndefined();
  });

  it("a standby is ready while in contact, and not ready when it lost contact too", () => {
    const standby = { leading: false, synced: 0, caches: 1 };
    expect(notReadyReason({ ...standby, apiLostForMs: 0 })).toBeUndefined();
    expect(notReadyReason({ ...standby, apiLostForMs: apiLostGraceMs })).toMatch(/^no answer/);
    expect(notReadyReason({ ...synced, synced: 0, apiLostForMs: 0 })).toBe("caches not synced (0/1)");
  });
});

describe("fault metrics", () => {
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  it("exports faults by operation and kind, and how long the API server has been away", async () => {
    const metrics = makeControllerMetrics();
    const faults = new FaultCounter();
    faults.record("watch", "expired");
    faults.record("event", "dropped");
    faults.record("event", "dropped");
    faults.record("patchStatus", "slow");
    const { counter, advance } = onClock();
    counter.record("watch", 0);
    advance(12_500);
    metrics.attach({
      queue: () => idleQueue,
      handlerCallsInFlight: () => 0,
      requests: counter,
      leader: () => true,
      faults,
      apiLostSeconds: () => counter.lostForMs() / 1000,
    });
    const server = await startOpsServer("127.0.0.1:0", { registry: metrics.registry });
    if (server === undefined) throw new Error("no server");
    closers.push(() => new Promise((resolve) => server.close(() => resolve())));
    const text = await (
      await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`)
    ).text();
    const faultLines = text.split("\n").filter((line) => line.startsWith("opstask_api_faults_total{"));
    expect(faultLines.sort()).toEqual([
      'opstask_api_faults_total{operation="event",fault="dropped"} 2',
      'opstask_api_faults_total{operation="patchStatus",fault="slow"} 1',
      'opstask_api_faults_total{operation="watch",fault="expired"} 1',
    ]);
    expect(text).toContain("opstask_api_unreachable_seconds 12.5");
  });
});
