// Lease leader election against a real kube-apiserver, with short timings (lease 2 s, renew deadline
// 1.5 s, retry 0.3 s): one leader at a time, hand-over on release and on expiry, loss on a taken Lease
// and on an unreachable apiserver, re-creation of a deleted Lease. Timings are asserted loosely.
import { createServer } from "node:net";
import { assert, describe, it } from "@effect/vitest";
import {
  CoordinationV1Api,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  V1MicroTime,
} from "@kubernetes/client-node";
import { Cause, Duration, Effect, Exit, Scope } from "effect";
import { RequestCounter } from "../../src/kube/request-metrics.ts";
import {
  type LeaderElection,
  type LeaderElectionOptions,
  runLeaderElection,
} from "../../src/runtime/leader-election.ts";
import { createTestNamespace, useControlPlane } from "../support/cluster.ts";

const cluster = useControlPlane();

const timings = {
  leaseDuration: Duration.seconds(2),
  renewDeadline: Duration.millis(1500),
  retryPeriod: Duration.millis(300),
} as const;

const promise = <A>(f: () => Promise<A>) => Effect.promise(f);

/** Fails the test if `effect` does not complete within `ms`; returns how long it took. */
const within = (what: string, ms: number, effect: Effect.Effect<void>) =>
  Effect.gen(function* () {
    const started = Date.now();
    yield* Effect.timeoutOrElse(effect, {
      duration: Duration.millis(ms),
      orElse: () => Effect.die(new Error(`timed out after ${ms} ms waiting for ${what}`)),
    });
    return Date.now() - started;
  });

type Extra = Partial<Omit<LeaderElectionOptions, "namespace" | "name" | "identity">>;

/** A candidate in a scope of its own (closed at the end of the test at the latest). */
const candidate = (namespace: string, name: string, identity: string, extra: Extra = {}) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make();
    yield* Effect.addFinalizer(() => Scope.close(scope, Exit.void));
    const counter = new RequestCounter();
    const election: LeaderElection = yield* runLeaderElection({
      kubeConfig: cluster().makeKubeConfig(),
      namespace,
      name,
      identity,
      counter,
      ...timings,
      ...extra,
    }).pipe(Scope.provide(scope));
    return { election, counter, close: Scope.close(scope, Exit.void) };
  });

const leases = () => cluster().makeKubeConfig().makeApiClient(CoordinationV1Api);

const readSpec = (namespace: string, name: string) =>
  promise(() => leases().readNamespacedLease({ namespace, name })).pipe(Effect.map((lease) => lease.spec));

/** A port nothing listens on (bound, then closed). */
const closedPort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });

/** The cluster's KubeConfig with the server moved to `server`. */
const kubeConfigFor = (server: string): KubeConfig => {
  const base = cluster().makeKubeConfig();
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: base.getClusters().map((c) => ({ ...c, server })),
    users: base.getUsers(),
    contexts: base.getContexts(),
    currentContext: base.getCurrentContext(),
  });
  return kc;
};

describe("leader election", () => {
  it.live("one candidate leads, another waits; a graceful stop hands over at once", () =>
    Effect.gen(function* () {
      const ns = yield* promise(() => createTestNamespace(cluster().makeKubeConfig(), "le"));
      const a = yield* candidate(ns, "lock", "a");
      yield* within("a to lead", 5000, a.election.leading);
      assert.isTrue(a.election.isLeader());
      assert.deepStrictEqual(a.election.status(), { leader: true, holder: "a", transitions: 0 });
      const created = yield* readSpec(ns, "lock");
      assert.strictEqual(created?.holderIdentity, "a");
      assert.strictEqual(created?.leaseDurationSeconds, 2);
      assert.strictEqual(created?.leaseTransitions, 0);
      // MicroTime is written with 6 fractional digits and read back as a string.
      assert.match(String(created?.renewTime), /\.\d{6}Z$/);

      const b = yield* candidate(ns, "lock", "b");
      // Longer than the lease duration: only a's renewals keep b out.
      yield* Effect.sleep(Duration.seconds(3));
      assert.isFalse(b.election.isLeader());
      assert.deepStrictEqual(b.election.status(), { leader: false, holder: "a", transitions: 0 });
      assert.isTrue(a.election.isLeader());
      const renewed = yield* readSpec(ns, "lock");
      assert.notStrictEqual(String(renewed?.renewTime), String(created?.renewTime), "a renews");
      assert.strictEqual(String(renewed?.acquireTime), String(created?.acquireTime));
      assert.isAtLeast(a.counter.count("patch", 200), 5, "renewals are counted as patches");
      assert.strictEqual(a.counter.count("create", 201), 1);

      yield* a.close;
      assert.isFalse(a.election.isLeader());
      const tookMs = yield* within("b to take over", 5000, b.election.leading);
      assert.isBelow(tookMs, 2000, "a released the lease: b need not wait for it to expire");
      assert.deepStrictEqual(b.election.status(), { leader: true, holder: "b", transitions: 1 });
      const spec = yield* readSpec(ns, "lock");
      assert.strictEqual(spec?.holderIdentity, "b");
      assert.strictEqual(spec?.leaseTransitions, 1);
      console.info(`leader election: hand-over after release took ${tookMs} ms`);
    }),
  );

  it.live("a leader that releases leaves a free Lease behind", () =>
    Effect.gen(function* () {
      const ns = yield* promise(() => createTestNamespace(cluster().makeKubeConfig(), "le"));
      const a = yield* candidate(ns, "lock", "a");
      yield* within("a to lead", 5000, a.election.leading);
      yield* a.close;
      const spec = yield* readSpec(ns, "lock");
      assert.strictEqual(spec?.holderIdentity ?? "", "");
      assert.strictEqual(spec?.leaseDurationSeconds, 1);
      assert.strictEqual(spec?.leaseTransitions, 0);
      assert.deepStrictEqual(a.election.status(), { leader: false, transitions: 0 });
    }),
  );

  it.live("a leader that stops without releasing is replaced once its lease expires", () =>
    Effect.gen(function* () {
      const ns = yield* promise(() => createTestNamespace(cluster().makeKubeConfig(), "le"));
      const a = yield* candidate(ns, "lock", "a", { releaseOnCancel: false });
      yield* within("a to lead", 5000, a.election.leading);
      const b = yield* candidate(ns, "lock", "b");
      yield* Effect.sleep(Duration.millis(700)); // b has seen a's lease
      assert.isFalse(b.election.isLeader());
      yield* a.close; // a "crash": no more renewals, no release
      const spec = yield* readSpec(ns, "lock");
      assert.strictEqual(spec?.holderIdentity, "a", "not released");
      const tookMs = yield* within("b to take over", 10_000, b.election.leading);
      // b waits for a's lease duration (2 s) from its last observed renewal (≤ 0.3 s before the crash).
      assert.isAtLeast(tookMs, 1200, "b waited for the lease to expire");
      assert.deepStrictEqual(b.election.status(), { leader: true, holder: "b", transitions: 1 });
      console.info(`leader election: take-over after expiry took ${tookMs} ms`);
    }),
  );

  it.live("a leader whose Lease is taken by someone else reports lost", () =>
    Effect.gen(function* () {
      const ns = yield* promise(() => createTestNamespace(cluster().makeKubeConfig(), "le"));
      const a = yield* candidate(ns, "lock", "a");
      yield* within("a to lead", 5000, a.election.leading);
      yield* promise(() =>
        leases().patchNamespacedLease(
          {
            namespace: ns,
            name: "lock",
            body: {
              spec: { holderIdentity: "intruder", renewTime: new V1MicroTime(), leaseDurationSeconds: 30 },
            },
          },
          setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
        ),
      );
      const tookMs = yield* within("a to lose", 5000, a.election.lost);
      assert.isFalse(a.election.isLeader());
      assert.deepStrictEqual(a.election.status(), { leader: false, holder: "intruder", transitions: 0 });
      // Stopped for good: it neither renews nor takes the Lease back.
      yield* Effect.sleep(Duration.millis(700));
      const spec = yield* readSpec(ns, "lock");
      assert.strictEqual(spec?.holderIdentity, "intruder");
      // Closing after the loss does not touch the Lease.
      yield* a.close;
      assert.strictEqual((yield* readSpec(ns, "lock"))?.holderIdentity, "intruder");
      console.info(`leader election: loss to an intruder noticed after ${tookMs} ms`);
    }),
  );

  it.live("a leader that cannot reach the apiserver reports lost before another takes over", () =>
    Effect.gen(function* () {
      const ns = yield* promise(() => createTestNamespace(cluster().makeKubeConfig(), "le"));
      const unreachable = kubeConfigFor(`https://127.0.0.1:${yield* promise(closedPort)}`);
      let cut = false;
      const a = yield* candidate(ns, "lock", "a", {
        kubeConfigHook: () => (cut ? unreachable : cluster().makeKubeConfig()),
      });
      yield* within("a to lead", 5000, a.election.leading);
      const b = yield* candidate(ns, "lock", "b");
      yield* Effect.sleep(Duration.millis(700));
      assert.isFalse(b.election.isLeader());

      let lostAt = 0;
      let bLeadAt = 0;
      const cutAt = Date.now();
      cut = true;
      yield* Effect.all(
        [
          within("a to lose", 5000, a.election.lost).pipe(
            Effect.tap(() => Effect.sync(() => (lostAt = Date.now()))),
          ),
          within("b to take over", 10_000, b.election.leading).pipe(
            Effect.tap(() => Effect.sync(() => (bLeadAt = Date.now()))),
          ),
        ],
        { concurrency: "unbounded" },
      );
      assert.isFalse(a.election.isLeader());
      assert.isTrue(b.election.isLeader());
      assert.isBelow(lostAt, bLeadAt, "a gave up before b took over: never two leaders");
      assert.isBelow(lostAt - cutAt, 3000, "a gave up within about the renew deadline");
      assert.isAbove(a.counter.count("patch", 0), 0, "failed renewals are counted with code 0");
      console.info(
        `leader election: unreachable leader lost after ${lostAt - cutAt} ms, taken over after ${bLeadAt - cutAt} ms`,
      );
    }),
  );

  it.live("a Lease deleted under its leader is re-created by the next renewal", () =>
    Effect.gen(function* () {
      const ns = yield* promise(() => createTestNamespace(cluster().makeKubeConfig(), "le"));
      const a = yield* candidate(ns, "lock", "a");
      yield* within("a to lead", 5000, a.election.leading);
      yield* promise(() => leases().deleteNamespacedLease({ namespace: ns, name: "lock" }));
      yield* Effect.sleep(Duration.seconds(1));
      assert.isTrue(a.election.isLeader());
      const spec = yield* readSpec(ns, "lock");
      assert.strictEqual(spec?.holderIdentity, "a");
      assert.strictEqual(a.counter.count("create", 201), 2);
      yield* Effect.sleep(Duration.seconds(2)); // beyond the renew deadline: still leading
      assert.isTrue(a.election.isLeader());
    }),
  );

  it.live("rejects timings that cannot be safe (renewDeadline ≥ leaseDuration)", () =>
    Effect.gen(function* () {
      const exit = yield* runLeaderElection({
        kubeConfig: new KubeConfig(),
        namespace: "x",
        name: "y",
        identity: "z",
        leaseDuration: Duration.seconds(2),
        renewDeadline: Duration.seconds(2),
      }).pipe(Effect.scoped, Effect.exit);
      assert.isTrue(Exit.isFailure(exit) && Cause.hasDies(exit.cause));
    }),
  );
});
