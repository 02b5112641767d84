// The per-key core's rules (src/reconcile/core.ts), one per test, through `step(input) → commands`
// with scripted answers (test/support/core-harness.ts). The property tests check them end to end
// through the simulated controller; here each is pinned on its own, including the group lock and
// writes that are still in flight, which a synchronous simulation cannot race.
import { describe, expect, it } from "vitest";
import { backoffDelayMs } from "../../src/machine/backoff.ts";
import { Answer } from "../../src/reconcile/pass.ts";
import {
  all,
  type CallCommand,
  completed,
  config,
  coreHarness,
  epoch,
  find,
  hang,
  poll,
  taskObject,
  transient,
  woken,
} from "../support/core-harness.ts";

const callOf = (commands: Parameters<typeof find>[0]): CallCommand => {
  const call = find(commands, "Call");
  if (call === undefined) throw new Error("the pass must call a handler");
  return call as CallCommand;
};

describe("one pass per key", () => {
  it("defers a turn of a key in a pass, and runs it again when the pass ends", () => {
    const h = coreHarness();
    h.change("ADDED", taskObject("a", { state: "InProgress" }));
    const call = callOf(h.turn("ns/a", { reply: hang }));
    expect(call.phase).toBe("execute");
    expect(h.turn("ns/a")).toEqual([]);
    // Its own writes wake nobody; the deferred turn does.
    const ended = h.returns(call, poll);
    expect(find(ended, "Ended")?.how).toBe("ended");
    expect(woken(ended)).toEqual(["ns/a"]);
    expect(find(h.turn("ns/a"), "Started")?.pass.trigger).toBe("deferred");
  });
});

describe("admission, one at a time per group", () => {
  it("defers another task of the group while one may admit, and wakes it once that one calls past Admit", () => {
    const h = coreHarness();
    h.change("ADDED", taskObject("a"));
    h.change("ADDED", taskObject("b"));
    const admit = callOf(h.turn("ns/a", { reply: hang }));
    expect(admit.phase).toBe("admit");
    expect(h.turn("ns/b")).toEqual([]);
    const past = h.returns(admit, completed, { reply: hang });
    expect(callOf(past).phase).toBe("execute");
    expect(woken(past)).toContain("ns/b");
    expect(find(h.turn("ns/b", { reply: hang }), "Started")).toBeDefined();
  });

  it("holds no group for a task that cannot admit (running, finished or deleting)", () => {
    const h = coreHarness();
    h.tick(5_000);
    // Each pass is left in its first request: a new task of the group still starts beside it.
    const shapes = [
      ["x", { state: "InProgress" }],
      ["y", { state: "Succeeded", ttlSeconds: 1 }],
      ["z", { state: "InProgress", deleting: true }],
    ] as const;
    for (const [name, shape] of shapes) {
      h.change("ADDED", taskObject(name, shape));
      expect(find(h.turn(`ns/${name}`, { write: hang, reply: hang }), "Started")).toBeDefined();
    }
    const a = h.change("ADDED", taskObject("a"));
    expect(woken(a)).toContain("ns/a");
    expect(find(h.turn("ns/a", { reply: hang }), "Started")).toBeDefined();
  });
});

describe("a handler result whose write failed", () => {
  it("is kept for the next pass, handed to it once (no second call), and the key backs off", () => {
    const h = coreHarness();
    h.change("ADDED", taskObject("a", { state: "InProgress" }));
    const failWrite = (request: { readonly _tag: string; readonly patch?: { readonly state?: unknown } }) =>
      request._tag === "PatchStatus" && request.patch?.state === "Succeeded"
        ? Answer.Failed({ cause: "conflict", now: epoch })
        : undefined;
    const first = h.turn("ns/a", { write: failWrite });
    const call = callOf(first);
    const aborted = find(first, "Ended");
    expect(aborted?.how).toBe("aborted");
    expect(aborted?.retryInMs).toBe(Math.max(config.minRequeueMs, backoffDelayMs(config, 0)));
    expect(h.core.keptCalls()).toEqual([call.callId]);
    expect(h.core.counts.remembered).toBe(1);
    h.tick(aborted?.retryInMs ?? 0);
    const second = h.turn("ns/a");
    const started = find(second, "Started");
    expect(started?.kept).toBe(call.callId);
    expect(started?.step.pass.unwritten).toEqual({ phase: "execute", outcome: completed });
    expect(started?.step.pass.snapshot.context.input.retries).toBe(1);
    expect(find(second, "Call")).toBeUndefined();
    expect(find(second, "Ended")?.how).toBe("ended");
    expect(h.core.keptCalls()).toEqual([]);
  });
});

describe("a task deleted during its handler call", () => {
  it("goes free at once, but an Admit or Execute call holds its group until it returns; its result is discarded", () => {
    const h = coreHarness();
    h.change("ADDED", taskObject("a", { state: "InProgress" }));
    const call = callOf(h.turn("ns/a", { reply: hang }));
    // Another object's deletion under the same name orphans nothing.
    const other = h.change(
      "MODIFIED",
      taskObject("a", { state: "InProgress", uid: "uid-other", deleting: true }),
    );
    expect(find(other, "Abort")).toBeUndefined();
    const deleted = h.change(
      "MODIFIED",
      taskObject("a", { state: "InProgress", deleting: true, version: 2 }),
    );
    expect(find(deleted, "Abort")?.callId).toBe(call.callId);
    expect(woken(deleted)).toContain("ns/a");
    // The task itself goes on (its cleanup pass runs) ...
    expect(find(h.turn("ns/a", { reply: hang }), "Started")).toBeDefined();
    // ... but a new task of its group may not admit while the call runs; one of another group may.
    h.change("ADDED", taskObject("b"));
    h.change("ADDED", taskObject("c", { group: "etcd-c" }));
    expect(h.turn("ns/b")).toEqual([]);
    expect(find(h.turn("ns/c", { reply: hang }), "Started")).toBeDefined();
    expect(h.core.counts.orphanedCalls).toBe(1);
    // The call ends: its result is for nobody, and the group is free.
    const returned = h.returns(call, completed);
    expect(find(returned, "CallEnded")?.current).toBe(false);
    expect(find(returned, "Perform")).toBeUndefined();
    expect(woken(returned)).toEqual(["ns/b"]);
    expect(h.core.counts.orphanedCalls).toBe(0);
    expect(find(h.turn("ns/b", { reply: hang }), "Started")).toBeDefined();
  });

  it("never orphans a call that has returned (its pass is writing the result), nor a Cleanup call", () => {
    const h = coreHarness();
    h.change("ADDED", taskObject("a", { state: "InProgress" }));
    const writing = (request: { readonly _tag: string; readonly patch?: { readonly state?: unknown } }) =>
      request._tag === "PatchStatus" && request.patch?.state !== undefined ? "hang" : undefined;
    expect(find(h.turn("ns/a", { write: writing }), "CallEnded")?.current).toBe(true);
    const deleting = h.change(
      "MODIFIED",
      taskObject("a", { state: "InProgress", deleting: true, version: 2 }),
    );
    expect(find(deleting, "Abort")).toBeUndefined();
    expect(h.turn("ns/a")).toEqual([]);
    h.change("ADDED", taskObject("c", { state: "Succeeded", deleting: true }));
    expect(callOf(h.turn("ns/c", { reply: hang })).phase).toBe("cleanup");
    expect(
      find(h.change("DELETED", taskObject("c", { state: "Succeeded", deleting: true })), "Abort"),
    ).toBeUndefined();
  });
});

describe("what is remembered between passes", () => {
  it("nothing of settled tasks; a task that is gone is forgotten", () => {
    const h = coreHarness();
    h.change("ADDED", taskObject("s", { state: "Succeeded" }));
    h.resync(["ns/s"]);
    expect(h.turn("ns/s").map((command) => command._tag)).toEqual(["DueChanged"]);
    expect(h.core.counts.remembered).toBe(0);
    h.change("ADDED", taskObject("b", { state: "InProgress" }));
    expect(find(h.turn("ns/b", { reply: () => transient }), "Ended")?.end?.reason).toBe("backoff");
    expect(h.core.counts.remembered).toBe(1);
    h.change("DELETED", taskObject("b", { state: "InProgress" }));
    expect(h.core.counts.remembered).toBe(0);
    // A pass that stops after its task's deletion leaves nothing behind.
    h.change("ADDED", taskObject("c", { state: "InProgress" }));
    h.turn("ns/c", {
      write: (request) => (request._tag === "PatchStatus" && "state" in request.patch ? "hang" : undefined),
    });
    h.change("DELETED", taskObject("c", { state: "InProgress" }));
    expect(
      find(h.answer("ns/c", Answer.Failed({ cause: "conflict", now: epoch })), "Ended")?.retryInMs,
    ).toBeUndefined();
    expect(h.core.counts.remembered).toBe(0);
  });

  it("a task whose last finalizer our write removed gets no pass until the watch reports it gone", () => {
    const h = coreHarness();
    h.change("ADDED", taskObject("c", { state: "Succeeded", deleting: true }));
    expect(all(h.turn("ns/c"), "Perform").map((p) => p.request._tag)).toContain("RemoveFinalizer");
    // The copy still holds it (no finalizer left): no pass acts on it.
    expect(h.copy.get("ns/c")).toBeDefined();
    expect(h.core.counts.remembered).toBe(1);
    h.resync(["ns/c"]);
    expect(h.turn("ns/c")).toEqual([]);
    h.change("DELETED", taskObject("c", { state: "Succeeded", deleting: true }));
    expect(h.core.counts.remembered).toBe(0);
  });
});

describe("wake-ups", () => {
  it("wake peers only when a task's state or deletion changed, and never a task on its own write", () => {
    const h = coreHarness();
    h.change("ADDED", taskObject("p"));
    expect(woken(h.change("ADDED", taskObject("a")))).toEqual(["ns/a", "ns/p"]);
    expect(woken(h.change("MODIFIED", taskObject("a", { version: 2, labels: { x: "y" } })))).toEqual([
      "ns/a",
    ]);
    // a's pass writes InProgress: p is woken, a is not.
    expect(woken(h.turn("ns/a", { reply: (phase) => (phase === "admit" ? completed : poll) }))).toEqual([
      "ns/p",
    ]);
    // The watch event of a's last write: a is woken (its turn will skip it), p is not.
    const last = h.copy.get("ns/a");
    if (last === undefined) throw new Error("a is in the copy");
    expect(woken(h.change("MODIFIED", last))).toEqual(["ns/a"]);
    expect(
      woken(h.change("MODIFIED", taskObject("a", { state: "InProgress", deleting: true, version: 900 }))),
    ).toEqual(["ns/a", "ns/p"]);
    // A finished peer is not woken.
    h.change("MODIFIED", taskObject("p", { state: "Succeeded", version: 901 }));
    expect(woken(h.change("DELETED", taskObject("a", { state: "InProgress", deleting: true })))).toEqual([]);
  });

  it("skip a turn that would see nothing new: woken only by changes of its object, at the version its last pass left", () => {
    const h = coreHarness();
    h.change("ADDED", taskObject("a", { state: "InProgress" }));
    h.turn("ns/a", { reply: () => poll });
    const echo = () => {
      const left = h.copy.get("ns/a");
      if (left === undefined) throw new Error("a is in the copy");
      expect(woken(h.change("MODIFIED", left))).toEqual(["ns/a"]);
      return left;
    };
    // The echo of the pass's own last write, seen after the pass: no pass.
    echo();
    expect(h.turn("ns/a")).toEqual([]);
    // A newer version is a change: it runs.
    const left = echo();
    h.change("MODIFIED", { ...left, metadata: { ...(left.metadata as object), resourceVersion: "5000" } });
    const polls = { reply: () => poll };
    expect(find(h.turn("ns/a", polls), "Started")?.pass.trigger).toBe("object changed");
    // Anything else that woke it (a resync, a peer, a timer) runs it, whatever the version.
    echo();
    h.resync(["ns/a"]);
    expect(find(h.turn("ns/a", polls), "Started")?.pass.onlyChanged).toBe(false);
    echo();
    h.change("ADDED", taskObject("p"));
    expect(find(h.turn("ns/a", polls), "Started")?.pass.trigger).toBe("object changed");
    echo();
    h.tick(60_000);
    expect(h.core.takeDue(h.now())).toContain("ns/a");
    expect(find(h.turn("ns/a"), "Started")).toBeDefined();
  });

  it("do not skip after a pass whose writes may have carried someone else's change", () => {
    const h = coreHarness();
    h.change("ADDED", taskObject("a", { state: "InProgress" }));
    h.turn("ns/a", { reply: () => poll, foreign: true });
    const left = h.copy.get("ns/a");
    if (left === undefined) throw new Error("a is in the copy");
    expect(woken(h.change("MODIFIED", left))).toEqual(["ns/a"]);
    expect(find(h.turn("ns/a"), "Started")).toBeDefined();
  });

  it("forget why a key was woken once its object is gone: a new object under the name starts afresh", () => {
    const h = coreHarness();
    h.change("ADDED", taskObject("a", { state: "InProgress" }));
    h.turn("ns/a", { reply: () => poll });
    h.change("MODIFIED", taskObject("a", { state: "InProgress", deleting: true, version: 900 }));
    // The pass that change woke never runs: the object is gone first.
    h.change("DELETED", taskObject("a", { state: "InProgress", deleting: true }));
    h.change("ADDED", taskObject("a", { uid: "uid-a2", version: 901 }));
    expect(find(h.turn("ns/a", { reply: hang }), "Started")?.pass.trigger).toBe("object added");
  });
});

describe("due times", () => {
  it("hand out a due key with the reason its time was set, once; a settled task is due at its TTL", () => {
    const h = coreHarness({ jitter: (delayMs) => delayMs + 7 });
    h.change("ADDED", taskObject("a", { state: "InProgress", group: "g-a" }));
    const end = find(h.turn("ns/a", { reply: () => transient }), "Ended")?.end;
    if (end?._tag !== "RequeueAfter" || end.reason !== "backoff") throw new Error("a backs off");
    h.change("ADDED", taskObject("s", { state: "Succeeded" }));
    const ttl = epoch + 3_600_000;
    const due = epoch + end.delayMs + 7;
    expect(h.core.nextDue()).toBe(due);
    expect(h.core.dueCount).toBe(2);
    expect(h.core.takeDue(due - 1)).toEqual([]);
    expect(h.core.takeDue(due)).toEqual(["ns/a"]);
    expect(h.core.takeDue(due)).toEqual([]);
    h.tick(end.delayMs + 7);
    expect(find(h.turn("ns/a", { reply: hang }), "Started")?.pass.trigger).toBe("timer: backoff");
    expect(h.core.nextDue()).toBe(ttl);
    expect(h.core.takeDue(ttl)).toEqual(["ns/s"]);
    h.tick(ttl - h.now());
    expect(find(h.turn("ns/s", { reply: hang }), "Started")?.pass.trigger).toBe("timer: ttl");
  });
});
