import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { RequestCounter } from "../../src/kube/request-metrics.ts";
import { makeControllerMetrics } from "../../src/runtime/metrics.ts";
import { startOpsServer } from "../../src/runtime/ops-server.ts";

const queue = {
  depth: 2,
  inFlight: 1,
  delayed: 3,
  adds: 9,
  deduplicated: 0,
  started: 7,
  processed: 6,
  failures: 0,
  waitTotalMs: 0,
  waitMaxMs: 250,
  processingTotalMs: 0,
};

describe("operational endpoints", () => {
  const closers: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  const serve = async (endpoints: Parameters<typeof startOpsServer>[1]) => {
    const server = await startOpsServer("127.0.0.1:0", endpoints);
    if (server === undefined) throw new Error("no server");
    closers.push(() => new Promise((resolve) => server.close(() => resolve())));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  };

  it("answers /healthz, and /readyz only once ready", async () => {
    let ready = false;
    const base = await serve({ notReady: () => (ready ? undefined : "caches not synced (0/1)") });
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const before = await fetch(`${base}/readyz`);
    expect([before.status, await before.text()]).toEqual([503, "caches not synced (0/1)\n"]);
    ready = true;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
  });

  it("serves the task metrics of DEP-05, reconcile, queue and API request metrics", async () => {
    const metrics = makeControllerMetrics();
    const requests = new RequestCounter();
    requests.record("patch", 200);
    requests.record("patch", 200);
    metrics.attach({ queue: () => queue, handlerCallsInFlight: () => 4, requests, leader: () => true });
    metrics.observer.taskFinished(
      { type: "onDemandSnapshot", state: "Succeeded", etcd: "etcd-a", namespace: "shoot" },
      42,
    );
    metrics.observer.passEnded("ended", 0.01);
    const base = await serve({ registry: metrics.registry });
    const text = await (await fetch(`${base}/metrics`)).text();
    expect(text).toContain(
      'opstask_tasks_total{type="onDemandSnapshot",state="Succeeded",etcd="etcd-a",namespace="shoot"} 1',
    );
    expect(text).toContain(
      'opstask_task_duration_seconds_bucket{le="60",type="onDemandSnapshot",state="Succeeded",etcd="etcd-a",namespace="shoot"} 1',
    );
    expect(text).toContain('opstask_reconcile_total{result="ended"} 1');
    expect(text).toContain("opstask_workqueue_depth 2");
    expect(text).toContain("opstask_handler_calls_in_flight 4");
    expect(text).toContain('opstask_api_requests_total{verb="patch",code="200"} 2');
    expect(text).toContain("opstask_leader 1");
  });
});
