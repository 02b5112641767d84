/**
 * The settled rule (src/reconcile/settled.ts) against the machine it stands in for: over arbitrary
 * pass inputs, a task the rule calls settled gets from a real pass exactly one thing, a requeue for
 * its TTL at the due time the rule answered, and no request; and every fresh input whose pass is only
 * that requeue is one the rule calls settled (no takeover pass is left that it could have skipped).
 * Then the memory interpreter: a restart over settled tasks runs no pass, and still deletes each task
 * when its TTL runs out.
 */
import * as fc from "fast-check";
import { describe, expect, it } from "vitest";
import { etcdOpsTaskKind } from "../../src/etcd/api/etcdopstask-kind.ts";
import { machineVersion } from "../../src/machine/task-machine.ts";
import type { PassInput, TaskObservation } from "../../src/machine/types.ts";
import { lifecycleConfig } from "../../src/reconcile/defaults.ts";
import { Answer, driveSync, type PassRequest, start } from "../../src/reconcile/pass.ts";
import { settledUntil } from "../../src/reconcile/settled.ts";
import { completed, epoch, namespace, simulation, taskObject } from "../support/simulation.ts";

const config = lifecycleConfig(etcdOpsTaskKind, { requeueIntervalMs: 5_000 });
const finalizer = etcdOpsTaskKind.finalizer;
const wire = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");

const inputs: fc.Arbitrary<PassInput> = fc
  .record({
    state: fc.constantFrom(undefined, "Pending", "InProgress", "Succeeded", "Failed", "Rejected"),
    transitionAgoMs: fc.option(fc.integer({ min: -5_000, max: 200_000 }), { nil: undefined }),
    ttlSeconds: fc.integer({ min: 0, max: 120 }),
    finalizers: fc.subarray([finalizer, "example.com/keep"]),
    deletingAgoMs: fc.option(fc.integer({ min: 0, max: 10_000 }), { nil: undefined }),
    version: fc.option(fc.constantFrom(machineVersion - 1, machineVersion, machineVersion + 1), {
      nil: undefined,
    }),
    group: fc.option(fc.constant("e1"), { nil: undefined }),
    unsupported: fc.boolean(),
    retries: fc.constantFrom(0, 0, 1),
    retryAt: fc.option(fc.integer({ min: -1_000, max: 5_000 }), { nil: undefined }),
    known: fc.boolean(),
  })
  .map((draw): PassInput => {
    const now = epoch + 300_000;
    const task: TaskObservation = {
      namespace: "default",
      name: "t",
      uid: "uid-t",
      createdAt: epoch,
      finalizers: draw.finalizers,
      ttlSeconds: draw.ttlSeconds,
      ...(draw.deletingAgoMs === undefined ? {} : { deletingSince: now - draw.deletingAgoMs }),
      ...(draw.version === undefined ? {} : { machineVersion: draw.version }),
      ...(draw.group === undefined ? {} : { group: draw.group }),
      ...(draw.unsupported
        ? { unsupported: { code: "ERR_UNSUPPORTED_TASK" as const, reason: "no handler" } }
        : {}),
      status: {
        ...(draw.state === undefined ? {} : { state: draw.state }),
        ...(draw.transitionAgoMs === undefined
          ? {}
          : { lastTransitionTime: wire(now - draw.transitionAgoMs) }),
      },
    };
    return {
      task,
      peers: [],
      now,
      runId: "run-settled",
      retries: draw.retries,
      ...(draw.retryAt === undefined ? {} : { retryAt: now + draw.retryAt }),
      ...(draw.known
        ? { known: { phase: "execute" as const, outcome: { kind: "completed" as const, description: "x" } } }
        : {}),
      config,
    };
  });

/** A real pass over `input` (every write succeeds, no handler answers): its requests and its end. */
const passOver = (input: PassInput) => {
  const requests: PassRequest["_tag"][] = [];
  const last = driveSync(start(input), (request) => {
    requests.push(request._tag);
    return request._tag === "RunPhase" ? Answer.Suspend() : Answer.Done({ now: input.now });
  });
  return { requests, end: last._tag === "End" ? last.end : undefined };
};

describe("a settled task", () => {
  it("is exactly a task whose pass would only requeue for its TTL, at the due time", () => {
    fc.assert(
      fc.property(inputs, (input) => {
        const due = settledUntil(input);
        const { requests, end } = passOver(input);
        const fresh = input.known === undefined && input.retries === 0 && input.retryAt === undefined;
        const onlyTtl = requests.length === 0 && end?._tag === "RequeueAfter" && end.reason === "ttl";
        if (due !== undefined) {
          expect(requests).toEqual([]);
          expect(end).toMatchObject({
            _tag: "RequeueAfter",
            reason: "ttl",
            delayMs: Math.max(config.minRequeueMs, Math.ceil(due - input.now)),
          });
        }
        expect(due !== undefined).toBe(fresh && onlyTtl);
      }),
      { numRuns: 2_000 },
    );
  });

  it("gets no pass at a restart, and is still deleted when its TTL runs out", () => {
    const { server, controller } = simulation(() => completed("Snapshot created successfully"));
    const names = ["a", "b", "c"];
    names.forEach((name, i) => {
      server.create(taskObject(name, { etcd: `e-${name}`, ttl: 30 + 10 * i }));
    });
    controller.runUntilIdle();
    for (const name of names) {
      const stored = server.get(namespace, name);
      expect(stored.ok && (stored.value.status as { state?: string }).state).toBe("Succeeded");
    }
    const passesBefore = controller.passes.length;
    controller.crash();
    controller.runUntilIdle();
    expect(controller.passes.length).toBe(passesBefore);
    // Each timer is its TTL: nothing is deleted before it, each task right at it.
    controller.advanceAndRun(29_000);
    expect(names.map((name) => server.get(namespace, name).ok)).toEqual([true, true, true]);
    controller.advanceAndRun(1_000);
    expect(names.map((name) => server.get(namespace, name).ok)).toEqual([false, true, true]);
    controller.advanceAndRun(20_000);
    expect(names.map((name) => server.get(namespace, name).ok)).toEqual([false, false, false]);
    expect(controller.writes.filter((w) => w.effect === "DeleteTask")).toHaveLength(3);
  });
});
