// The runtime rules both controllers keep in ControllerMemory (src/reconcile/controller-memory.ts),
// one rule per test. The property tests check them end to end through the simulated controller; here
// each is pinned on its own, including the group lock, which a synchronous simulation cannot race.
import { describe, expect, it } from "vitest";
import type { TaskState } from "../../src/api/status.ts";
import type { PassEnd } from "../../src/effects/task-effect.ts";
import { etcdOpsTaskKind } from "../../src/etcd/api/etcdopstask-kind.ts";
import { ControllerMemory, type Kept } from "../../src/reconcile/controller-memory.ts";
import { lifecycleConfig } from "../../src/reconcile/defaults.ts";
import type { TaskFacts } from "../../src/reconcile/task-kind.ts";

const config = lifecycleConfig(etcdOpsTaskKind);
const memory = () => new ControllerMemory<Kept>({ config, supported: ["onDemandSnapshot"] });

const task = (name: string, state?: TaskState, extra: { deleting?: boolean } = {}): TaskFacts => ({
  metadata: {
    name,
    namespace: "ns",
    uid: `uid-${name}`,
    resourceVersion: "1",
    creationTimestamp: "2026-11-24T00:00:00Z",
    ...(extra.deleting === true ? { deletionTimestamp: "2026-11-24T00:01:00Z" } : {}),
  },
  ttlSeconds: 3600,
  group: "etcd-a",
  member: "onDemandSnapshot",
  status: state === undefined ? {} : { state },
});

const awaitChange: PassEnd = { _tag: "AwaitChange", reason: "test" };
const backoff: PassEnd = { _tag: "RequeueAfter", delayMs: 40, reason: "backoff" };
const noPeers = () => [];

describe("controller memory", () => {
  it("defers a pass of a busy key, and runs it again when the busy pass ends", () => {
    const m = memory();
    const first = m.start("ns/a", task("a", "InProgress"), noPeers, 0, "r1");
    if (first === undefined) throw new Error("the first pass must start");
    m.calling(first, "execute");
    expect(m.start("ns/a", task("a", "InProgress"), noPeers, 1, "r2")).toBeUndefined();
    expect(m.ended(first, awaitChange, 2, true)).toEqual(["ns/a"]);
    expect(m.start("ns/a", task("a", "InProgress"), noPeers, 3, "r3")).toBeDefined();
  });

  it("serialises admission per group: another task waits while one may admit, and runs once it is past Admit", () => {
    const m = memory();
    const a = m.start("ns/a", task("a"), noPeers, 0, "r1");
    if (a === undefined) throw new Error("a must start");
    expect(a.lockedGroup).toBe("ns/etcd-a");
    expect(m.start("ns/b", task("b"), noPeers, 1, "r2")).toBeUndefined();
    expect(m.calling(a, "admit")).toEqual({ lockedGroup: "ns/etcd-a", ready: [] });
    expect(m.start("ns/b", task("b"), noPeers, 2, "r3")).toBeUndefined();
    // Past Admit the group is free: b runs again; a stays busy until its pass ends.
    expect(m.calling(a, "execute")).toEqual({ lockedGroup: undefined, ready: ["ns/b"] });
    expect(m.start("ns/b", task("b"), noPeers, 3, "r4")?.lockedGroup).toBe("ns/etcd-a");
  });

  it("holds no group for a task that cannot admit (running, finished or deleting)", () => {
    const m = memory();
    for (const [name, facts] of [
      ["ns/x", task("x", "InProgress")],
      ["ns/y", task("y", "Succeeded")],
      ["ns/z", task("z", undefined, { deleting: true })],
    ] as const) {
      expect(m.start(name, facts, noPeers, 0, name)?.lockedGroup).toBeUndefined();
    }
    expect(m.start("ns/a", task("a"), noPeers, 0, "r")?.lockedGroup).toBe("ns/etcd-a");
  });

  it("keeps the result of an aborted pass for the next one, once, and backs off", () => {
    const m = memory();
    const kept: Kept = { known: { phase: "execute", outcome: { kind: "completed", description: "done" } } };
    const first = m.start("ns/a", task("a", "InProgress"), noPeers, 0, "r1");
    if (first === undefined) throw new Error("the first pass must start");
    m.calling(first, "execute");
    const aborted = m.aborted(first, kept, true);
    expect(aborted.delayMs).toBe(Math.max(config.minRequeueMs, config.backoffBaseMs));
    const second = m.start("ns/a", task("a", "InProgress"), noPeers, 1, "r2");
    expect(second?.kept).toBe(kept);
    expect(second?.input.known).toEqual(kept.known);
    expect(second?.input.retries).toBe(1);
    if (second === undefined) return;
    m.ended(second, awaitChange, 2, true);
    expect(m.start("ns/a", task("a", "InProgress"), noPeers, 3, "r3")?.kept).toBeUndefined();
  });

  it("cancels a deleted task's Admit or Execute call, never its Cleanup", () => {
    const m = memory();
    const a = m.start("ns/a", task("a"), noPeers, 0, "r1");
    if (a === undefined) throw new Error("a must start");
    m.calling(a, "admit");
    expect(m.start("ns/b", task("b"), noPeers, 1, "r2")).toBeUndefined();
    expect(m.cancel("ns/a", "uid-other")).toEqual({ cancelled: false, ready: [] });
    expect(m.cancel("ns/a", "uid-a")).toEqual({ cancelled: true, ready: ["ns/b"] });
    expect(m.isBusy("ns/a")).toBe(false);
    const c = m.start("ns/c", task("c", "Succeeded", { deleting: true }), noPeers, 2, "r3");
    if (c === undefined) throw new Error("c must start");
    m.calling(c, "cleanup");
    expect(m.cancel("ns/c", "uid-c").cancelled).toBe(false);
  });

  it("remembers nothing of settled tasks, and forgets a task that is gone", () => {
    const m = memory();
    const settled = m.start("ns/a", task("a", "Succeeded"), noPeers, 0, "r1");
    if (settled === undefined) throw new Error("a must start");
    m.ended(settled, { _tag: "RequeueAfter", delayMs: 3_600_000, reason: "ttl" }, 1, true);
    expect(m.remembered).toBe(0);
    const flaky = m.start("ns/b", task("b", "InProgress"), noPeers, 0, "r2");
    if (flaky === undefined) throw new Error("b must start");
    m.ended(flaky, backoff, 1, true);
    expect(m.remembered).toBe(1);
    m.forget("uid-b");
    expect(m.remembered).toBe(0);
    // A pass that ends after its task's deletion leaves nothing behind.
    const late = m.start("ns/c", task("c", "InProgress"), noPeers, 0, "r3");
    if (late === undefined) throw new Error("c must start");
    m.aborted(late, { known: { phase: "execute", outcome: { kind: "completed", description: "d" } } }, false);
    expect(m.remembered).toBe(0);
  });

  it("tells peers to look only when a task's state or deletion changed", () => {
    const m = memory();
    expect(m.peersMustLook("ADDED", task("a"))).toBe(true);
    expect(m.peersMustLook("MODIFIED", task("a"))).toBe(false);
    expect(m.peersMustLook("MODIFIED", task("a", "InProgress"))).toBe(true);
    expect(m.peersMustLook("MODIFIED", task("a", "InProgress", { deleting: true }))).toBe(true);
    expect(m.peersMustLook("DELETED", task("a", "InProgress", { deleting: true }))).toBe(true);
  });
});
