/**
 * The undecoded read of a finished task (src/reconcile/settled-facts.ts) against the full decode it
 * stands in for, over arbitrary stored objects: valid and broken specs, TTLs below, at and above the
 * default, broken metadata and status, every state, deleting or not. Where it answers, its metadata and
 * status are the decoded ones and its TTL never later than the decoded one (equal whenever the spec
 * decodes with a TTL up to the default); and it answers for every finished task that decodes, so a
 * takeover decodes none of them. Then the memory interpreter: a restart over finished tasks decodes
 * none, and each is still deleted at its own TTL, also one longer than the default.
 */
import * as fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isTerminal } from "../../src/api/status.ts";
import { etcdOpsTaskKind } from "../../src/etcd/api/etcdopstask-kind.ts";
import { settledFacts } from "../../src/reconcile/settled-facts.ts";
import { readFacts, type TaskKind } from "../../src/reconcile/task-kind.ts";
import { completed, namespace, simulation, taskObject } from "../support/simulation.ts";

const kind = etcdOpsTaskKind;
const defaultTtl = kind.defaultTtlSeconds;

/** Mostly valid values, some not: the answering case must come up often, the broken ones too. */
const mostly = <T>(valid: fc.Arbitrary<T>, broken: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 6, arbitrary: valid }, { weight: 1, arbitrary: broken });
const time = mostly(
  fc.constantFrom("2026-11-22T12:00:00Z", "2026-11-22T13:30:05Z"),
  fc.constant("yesterday"),
);
const objects = fc.record({
  creationTimestamp: time,
  deletionTimestamp: fc.option(time, { nil: undefined, freq: 2 }),
  finalizers: fc.subarray([kind.finalizer, "example.com/keep"]),
  version: fc.option(fc.constantFrom("1", "2", "99", "x"), { nil: undefined }),
  etcdName: fc.option(fc.constantFrom("e1", "", "e1/status"), { nil: undefined }),
  ttl: fc.option(
    fc.constantFrom<unknown>(0, 1, 30, defaultTtl - 1, defaultTtl, defaultTtl + 1, 86_400, -5, "60"),
    {
      nil: undefined,
    },
  ),
  config: fc.constantFrom<unknown>(
    { onDemandSnapshot: { type: "full" } },
    { onDemandSnapshot: { type: "full" } },
    { onDemandSnapshot: { type: "weekly" } },
    { onDemandMaintenance: {} },
    { somethingNew: { x: 1 } },
    { onDemandSnapshot: { type: "full" }, onDemandMaintenance: {} },
  ),
  status: fc.option(
    fc.record(
      {
        state: mostly(
          fc.constantFrom<unknown>("Succeeded", "Failed", "Rejected"),
          fc.constantFrom<unknown>("Pending", "InProgress", "Done"),
        ),
        lastTransitionTime: time,
        lastErrors: mostly(
          fc.constantFrom<unknown>(
            [],
            [{ code: "ERR_X", description: "d", observedAt: "2026-11-22T12:00:00Z" }],
          ),
          fc.constant<unknown>([{ code: 7 }]),
        ),
      },
      { requiredKeys: ["state"] },
    ),
    { nil: undefined },
  ),
});

const stored = (draw: typeof objects extends fc.Arbitrary<infer T> ? T : never) => ({
  apiVersion: "druid.gardener.cloud/v1alpha1",
  kind: "EtcdOpsTask",
  metadata: {
    name: "t",
    namespace,
    uid: "uid-t",
    resourceVersion: "7",
    generation: 1,
    creationTimestamp: draw.creationTimestamp,
    ...(draw.deletionTimestamp === undefined ? {} : { deletionTimestamp: draw.deletionTimestamp }),
    finalizers: draw.finalizers,
    ...(draw.version === undefined
      ? {}
      : { annotations: { "opstask.gardener.cloud/machine-version": draw.version } }),
  },
  spec: {
    ...(draw.etcdName === undefined ? {} : { etcdName: draw.etcdName }),
    ...(draw.ttl === undefined ? {} : { ttlSecondsAfterFinished: draw.ttl }),
    config: draw.config,
  },
  ...(draw.status === undefined ? {} : { status: draw.status }),
});

describe("a finished task read without its spec", () => {
  it("has the decoded metadata and status, a TTL never later than the decoded one, and covers every finished task", () => {
    let answered = 0;
    fc.assert(
      fc.property(objects, (draw) => {
        const object = stored(draw);
        const quick = settledFacts(kind, object);
        const full = readFacts(kind, object);
        const decodes = kind.decode(object).ok;
        if (quick !== undefined) {
          answered += 1;
          expect(full).toBeDefined();
          if (full === undefined) return;
          expect(quick.metadata).toEqual(full.metadata);
          expect(quick.status).toEqual(full.status);
          expect(isTerminal(full.status.state)).toBe(true);
          expect(full.metadata.deletionTimestamp).toBeUndefined();
          expect(quick.ttlSeconds).toBeLessThanOrEqual(full.ttlSeconds);
          if (decodes && full.ttlSeconds <= defaultTtl) expect(quick.ttlSeconds).toBe(full.ttlSeconds);
        }
        const finished =
          full !== undefined &&
          isTerminal(full.status.state) &&
          full.metadata.deletionTimestamp === undefined;
        if (decodes && finished) expect(quick).toBeDefined();
      }),
      { numRuns: 3_000 },
    );
    // Not vacuous: the generator reaches the answering case often.
    expect(answered).toBeGreaterThan(300);
  });

  it("is not read for a kind without `undecodedFacts`", () => {
    const { undecodedFacts: _, ...withoutReader } = kind;
    const plain: TaskKind<unknown> = withoutReader as TaskKind<unknown>;
    const object = stored({
      creationTimestamp: "2026-11-22T12:00:00Z",
      deletionTimestamp: undefined,
      finalizers: [],
      version: undefined,
      etcdName: "e1",
      ttl: 30,
      config: { onDemandSnapshot: { type: "full" } },
      status: { state: "Succeeded", lastTransitionTime: "2026-11-22T12:00:00Z", lastErrors: [] },
    });
    expect(settledFacts(kind, object)).toBeDefined();
    expect(settledFacts(plain, object)).toBeUndefined();
  });
});

describe("a restart over finished tasks (memory interpreter)", () => {
  it("decodes none of them, and deletes each at its own TTL, one above the default too", () => {
    let decodes = 0;
    const counting: typeof kind = {
      ...kind,
      decode: (object) => {
        decodes += 1;
        return kind.decode(object);
      },
    };
    const { server, controller } = simulation(() => completed("Snapshot created successfully"), {}, counting);
    const ttls = { short: 30, long: defaultTtl + 600 };
    for (const [name, ttl] of Object.entries(ttls))
      server.create(taskObject(name, { etcd: `e-${name}`, ttl }));
    controller.runUntilIdle();
    const states = Object.keys(ttls).map((name) => {
      const object = server.get(namespace, name);
      return object.ok ? (object.value.status as { state?: string }).state : undefined;
    });
    expect(states).toEqual(["Succeeded", "Succeeded"]);

    decodes = 0;
    controller.crash(); // and the restart's LIST
    const passesBefore = controller.passes.length;
    controller.runUntilIdle();
    expect(decodes).toBe(0);
    expect(controller.passes.length).toBe(passesBefore);

    const exists = () => Object.keys(ttls).map((name) => server.get(namespace, name).ok);
    controller.advanceAndRun(29_000);
    expect(exists()).toEqual([true, true]);
    controller.advanceAndRun(1_000);
    expect(exists()).toEqual([false, true]);
    // The long TTL's timer fires at the default (the most an undecoded spec can ask for): one pass
    // decodes the task and waits for the rest of its own TTL.
    controller.advanceAndRun((defaultTtl - 30) * 1000);
    expect(exists()).toEqual([false, true]);
    expect(decodes).toBeGreaterThan(0);
    controller.advanceAndRun(599_000);
    expect(exists()).toEqual([false, true]);
    controller.advanceAndRun(1_000);
    expect(exists()).toEqual([false, false]);
  });
});
