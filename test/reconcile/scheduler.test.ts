// The runtime rules both controllers keep in the scheduler (src/reconcile/scheduler.ts), one rule per
// test. The property tests check them end to end through the simulated controller; here each is pinned
// on its own, including the group lock, which a synchronous simulation cannot race.
import { describe, expect, it } from "vitest";
import type { TaskState } from "../../src/api/status.ts";
import type { PassEnd } from "../../src/effects/task-effect.ts";
import { etcdOpsTaskKind } from "../../src/etcd/api/etcdopstask-kind.ts";
import { lifecycleConfig } from "../../src/reconcile/defaults.ts";
import { type Kept, TaskScheduler, type Wake } from "../../src/reconcile/scheduler.ts";
import type { TaskFacts } from "../../src/reconcile/task-kind.ts";

const config = lifecycleConfig(etcdOpsTaskKind);
const memory = () => new TaskScheduler<Kept>({ config, supported: ["onDemandSnapshot"] });
const keys = (wake: ReadonlyArray<Wake>) => wake.map((w) => w.key);

const task = (
  name: string,
  state?: TaskState,
  extra: { deleting?: boolean; group?: string } = {},
): TaskFacts => ({
  metadata: {
    name,
    namespace: "ns",
    uid: `uid-${name}`,
    resourceVersion: "1",
    creationTimestamp: "2026-11-24T00:00:00Z",
    ...(extra.deleting === true ? { deletionTimestamp: "2026-11-24T00:01:00Z" } : {}),
  },
  ttlSeconds: 3600,
  group: extra.group ?? "etcd-a",
  member: "onDemandSnapshot",
  status: state === undefined ? {} : { state },
});

const awaitChange: PassEnd = { _tag: "AwaitChange", reason: "test" };
const backoff: PassEnd = { _tag: "RequeueAfter", delayMs: 40, reason: "backoff" };
const noPeers = () => [];

describe("the scheduler", () => {
  it("defers a pass of a busy key, and runs it again when the busy pass ends", () => {
    const m = memory();
    const first = m.start("ns/a", task("a", "InProgress"), noPeers, 0, "r1");
    if (first === undefined) throw new Error("the first pass must start");
    m.calling(first, "execute");
    expect(m.start("ns/a", task("a", "InProgress"), noPeers, 1, "r2")).toBeUndefined();
    expect(keys(m.ended(first, awaitChange, 2, true))).toEqual(["ns/a"]);
    expect(m.start("ns/a", task("a", "InProgress"), noPeers, 3, "r3")).toBeDefined();
  });

  it("serialises admission per group: another task waits while one may admit, and runs once it is past Admit", () => {
    const m = memory();
    const a = m.start("ns/a", task("a"), noPeers, 0, "r1");
    if (a === undefined) throw new Error("a must start");
    expect(a.lockedGroup).toBe("ns/etcd-a");
    expect(m.start("ns/b", task("b"), noPeers, 1, "r2")).toBeUndefined();
    expect(m.calling(a, "admit")).toMatchObject({ lockedGroup: "ns/etcd-a", wake: [] });
    expect(m.start("ns/b", task("b"), noPeers, 2, "r3")).toBeUndefined();
    // Past Admit the group is free: b runs again; a stays busy until its pass ends.
    const past = m.calling(a, "execute");
    expect(past.lockedGroup).toBeUndefined();
    expect(keys(past.wake)).toEqual(["ns/b"]);
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
    const aborted = m.stopped(first, kept, true, 0);
    expect(aborted.delayMs).toBe(Math.max(config.minRequeueMs, config.backoffBaseMs));
    const second = m.start("ns/a", task("a", "InProgress"), noPeers, 1, "r2");
    expect(second?.kept).toBe(kept);
    expect(second?.input.known).toEqual(kept.known);
    expect(second?.input.retries).toBe(1);
    if (second === undefined) return;
    m.ended(second, awaitChange, 2, true);
    expect(m.start("ns/a", task("a", "InProgress"), noPeers, 3, "r3")?.kept).toBeUndefined();
  });

  it("lets a task deleted during its Admit or Execute call go, but holds its group until the call ends (16.12)", () => {
    const m = memory();
    m.changed({ type: "ADDED", facts: task("a", "InProgress") });
    const a = m.start("ns/a", task("a", "InProgress"), noPeers, 0, "r1");
    if (a === undefined) throw new Error("a must start");
    const { callId } = m.calling(a, "execute");
    // Another object's deletion under the same name orphans nothing.
    expect(
      m.changed({
        type: "MODIFIED",
        facts: {
          ...task("a", "InProgress", { deleting: true }),
          metadata: { ...task("a").metadata, uid: "uid-other", deletionTimestamp: "2026-11-24T00:01:00Z" },
        },
      }).orphaned,
    ).toBeUndefined();
    const deleted = m.changed({ type: "MODIFIED", facts: task("a", "InProgress", { deleting: true }) });
    expect(deleted.orphaned).toBe(callId);
    // The task itself may go on (its cleanup pass runs) ...
    expect(m.idle("ns/a", "uid-a")).toBe(true);
    expect(keys(deleted.wake)).toContain("ns/a");
    expect(m.start("ns/a", task("a", "InProgress", { deleting: true }), noPeers, 1, "r2")).toBeDefined();
    // ... but a new task of its group may not admit while the call runs.
    expect(m.start("ns/b", task("b"), noPeers, 2, "r3")).toBeUndefined();
    expect(m.start("ns/c", task("c", undefined, { group: "etcd-c" }), noPeers, 2, "r4")).toBeDefined();
    expect(m.counts.inFlightCalls).toBe(1);
    // The call ends: its result is for nobody, and the group is free.
    const returned = m.returned(a, callId);
    expect(returned.current).toBe(false);
    expect(keys(returned.wake)).toEqual(["ns/b"]);
    expect(m.start("ns/b", task("b"), noPeers, 3, "r5")?.lockedGroup).toBe("ns/etcd-a");
  });

  it("never orphans a call that has returned (its pass is writing the result), nor a Cleanup call", () => {
    const m = memory();
    const a = m.start("ns/a", task("a", "InProgress"), noPeers, 0, "r1");
    if (a === undefined) throw new Error("a must start");
    const { callId } = m.calling(a, "execute");
    expect(m.returned(a, callId).current).toBe(true);
    expect(
      m.changed({ type: "MODIFIED", facts: task("a", "InProgress", { deleting: true }) }).orphaned,
    ).toBeUndefined();
    expect(m.idle("ns/a", "uid-a")).toBe(false);
    const c = m.start("ns/c", task("c", "Succeeded", { deleting: true }), noPeers, 2, "r3");
    if (c === undefined) throw new Error("c must start");
    m.calling(c, "cleanup");
    expect(
      m.changed({ type: "DELETED", facts: task("c", "Succeeded", { deleting: true }) }).orphaned,
    ).toBeUndefined();
  });

  it("remembers nothing of settled tasks, and forgets a task that is gone", () => {
    const m = memory();
    const settled = m.start("ns/a", task("a", "Succeeded"), noPeers, 0, "r1");
    if (settled === undefined) throw new Error("a must start");
    m.ended(settled, { _tag: "RequeueAfter", delayMs: 3_600_000, reason: "ttl" }, 1, true);
    expect(m.counts.remembered).toBe(0);
    const flaky = m.start("ns/b", task("b", "InProgress"), noPeers, 0, "r2");
    if (flaky === undefined) throw new Error("b must start");
    m.ended(flaky, backoff, 1, true);
    expect(m.counts.remembered).toBe(1);
    m.changed({ type: "DELETED", facts: task("b", "InProgress") });
    expect(m.counts.remembered).toBe(0);
    // A pass that ends after its task's deletion leaves nothing behind.
    const late = m.start("ns/c", task("c", "InProgress"), noPeers, 0, "r3");
    if (late === undefined) throw new Error("c must start");
    m.stopped(
      late,
      { known: { phase: "execute", outcome: { kind: "completed", description: "d" } } },
      false,
      0,
    );
    expect(m.counts.remembered).toBe(0);
  });

  it("wakes peers only when a task's state or deletion changed, and never a task on its own write's echo", () => {
    const m = memory();
    m.changed({ type: "ADDED", facts: task("p") });
    expect(keys(m.changed({ type: "ADDED", facts: task("a") }).wake)).toEqual(["ns/a", "ns/p"]);
    expect(keys(m.changed({ type: "MODIFIED", facts: task("a") }).wake)).toEqual(["ns/a"]);
    expect(keys(m.changed({ type: "MODIFIED", facts: task("a", "InProgress"), own: true }).wake)).toEqual([
      "ns/p",
    ]);
    expect(keys(m.changed({ type: "MODIFIED", facts: task("a", "InProgress"), own: true }).wake)).toEqual([]);
    expect(
      keys(m.changed({ type: "MODIFIED", facts: task("a", "InProgress", { deleting: true }) }).wake),
    ).toEqual(["ns/a", "ns/p"]);
    // A finished peer is not woken.
    m.changed({ type: "MODIFIED", facts: task("p", "Succeeded") });
    expect(
      keys(m.changed({ type: "DELETED", facts: task("a", "InProgress", { deleting: true }) }).wake),
    ).toEqual([]);
  });

  it("skips passes of a task whose last finalizer it removed, until the watch reports it gone", () => {
    const m = memory();
    m.release("uid-a");
    expect(m.start("ns/a", task("a", "Succeeded", { deleting: true }), noPeers, 0, "r1")).toBeUndefined();
    expect(m.counts.remembered).toBe(1);
    m.changed({ type: "DELETED", facts: task("a", "Succeeded", { deleting: true }) });
    expect(m.counts.remembered).toBe(0);
  });

  it("skips a pass that would see nothing new: woken only by changes of its object, at the version its last pass left", () => {
    const m = memory();
    const a = m.start("ns/a", task("a", "InProgress"), noPeers, 0, "r1");
    if (a === undefined) throw new Error("a must start");
    m.ended(a, awaitChange, 1, true, "7");
    // The echo of the pass's own last write, seen after the pass: skipped.
    m.note("ns/a", "object changed");
    expect(m.skipsEcho("ns/a", "7")).toBe(true);
    // A newer version is a change: it runs.
    m.note("ns/a", "object changed");
    expect(m.skipsEcho("ns/a", "8")).toBe(false);
    // Anything else that woke it (a timer, a peer, a resync) runs it, whatever the version.
    m.note("ns/a", "object changed");
    m.note("ns/a", "timer: poll");
    expect(m.skipsEcho("ns/a", "7")).toBe(false);
    m.note("ns/a", "peer changed");
    expect(m.skipsEcho("ns/a", "7")).toBe(false);
  });

  it("hands out a due key with the reason its time was set, once; a settled task is due at its TTL", () => {
    const m = memory();
    const a = m.start("ns/a", task("a", "InProgress", { group: "g-a" }), noPeers, 0, "r1");
    if (a === undefined) throw new Error("a must start");
    m.ended(a, backoff, 1, true);
    m.changed({ type: "ADDED", facts: task("s", "Succeeded"), now: 1 });
    const ttl = Date.parse("2026-11-24T00:00:00Z") + 3_600_000;
    expect(m.nextDue()).toBe(41);
    expect(m.takeDue(40)).toEqual([]);
    expect(m.takeDue(41)).toEqual(["ns/a"]);
    expect(m.takeDue(41)).toEqual([]);
    expect(m.start("ns/a", task("a", "InProgress", { group: "g-a" }), noPeers, 41, "r2")?.trigger).toBe(
      "timer: backoff",
    );
    expect(m.nextDue()).toBe(ttl);
    expect(m.takeDue(ttl)).toEqual(["ns/s"]);
    expect(m.start("ns/s", task("s", "Succeeded"), noPeers, ttl, "r3")?.trigger).toBe("timer: ttl");
    expect(m.dueCount).toBe(0);
  });

  it("forgets why a key was woken once its object is gone: a new object under the name starts afresh", () => {
    const m = memory();
    m.changed({ type: "ADDED", facts: task("a", "InProgress"), now: 0 });
    const first = m.start("ns/a", task("a", "InProgress"), noPeers, 0, "r0");
    if (first === undefined) throw new Error("a must start");
    m.ended(first, awaitChange, 0, true);
    m.changed({ type: "MODIFIED", facts: task("a", "InProgress", { deleting: true }), now: 1 });
    // The pass that change woke never runs: the object is gone first.
    m.changed({ type: "DELETED", facts: task("a", "InProgress", { deleting: true }), now: 2 });
    const renewed = { ...task("a"), metadata: { ...task("a").metadata, uid: "uid-a2" } };
    m.changed({ type: "ADDED", facts: renewed, now: 3 });
    expect(m.start("ns/a", renewed, noPeers, 3, "r1")?.trigger).toBe("object added");
  });

  it("does not skip after a pass whose writes may have carried someone else's change", () => {
    const m = memory();
    const a = m.start("ns/a", task("a", "InProgress"), noPeers, 0, "r1");
    if (a === undefined) throw new Error("a must start");
    m.ended(a, awaitChange, 1, true, undefined);
    m.note("ns/a", "object changed");
    expect(m.skipsEcho("ns/a", "7")).toBe(false);
  });
});
