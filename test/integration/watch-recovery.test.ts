/**
 * The task watch after a kube-apiserver outage (SIGKILL, then started again on the same address): it
 * follows the API server's return, because a probe ends the informer's backoff. The backoff is set to
 * one hour here, so a watch that came back by its backoff alone would not come back within the test.
 * The request counter the informer shares with the rest of the controller sees the contact lost while
 * the server is away, and back after (what /readyz reads).
 */
import { join } from "node:path";
import { assert, describe, it } from "@effect/vitest";
import { Effect, Exit, Logger, Scope } from "effect";
import { FaultCounter, KubeFaults } from "../../src/interpreters/kubernetes/fault-counter.ts";
import { ContactCounter } from "../../src/runtime/api-contact.ts";
import { makeInformer } from "../../src/runtime/informer.ts";
import { resource, tasks } from "../kube/fixtures.ts";
import { createTestNamespace, repoRoot, useControlPlane } from "../support/cluster.ts";

const crds = ["druid.gardener.cloud_etcdopstasks.yaml", "druid.gardener.cloud_etcds.yaml"].map((file) =>
  join(repoRoot, "deploy", "crds", file),
);
const cluster = useControlPlane({ crds });

/** Polls `check` every 50 ms until it holds (fails the test after `timeoutMs`). */
const eventually = (what: string, check: () => boolean, timeoutMs = 60_000) =>
  Effect.gen(function* () {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > deadline) return yield* Effect.die(new Error(`timed out waiting for ${what}`));
      yield* Effect.sleep(50);
    }
  });

describe("task watch across a kube-apiserver restart", () => {
  it.live(
    "comes back after the API server does, with the task created meanwhile, without waiting out its backoff",
    () =>
      Effect.gen(function* () {
        const kc = cluster().makeKubeConfig();
        const namespace = yield* Effect.promise(() => createTestNamespace(kc, "watch-recovery"));
        const t = tasks(kc);
        yield* Effect.promise(() => t.create(namespace, "before"));
        const counter = new ContactCounter();
        const faults = new FaultCounter();
        const scope = yield* Scope.make();
        const informer = yield* makeInformer({
          kubeConfig: kc,
          resource,
          namespace,
          counter,
          backoff: { initial: "1 hour", max: "1 hour" },
        }).pipe(Scope.provide(scope), Effect.provideService(KubeFaults, faults));
        yield* informer.synced;
        assert.isDefined(informer.get(namespace, "before"));

        // Watched while the server is away (once it is back, a probe may already have answered).
        const restart = Effect.runPromise(
          Effect.promise(() => cluster().restartApiserver({ signal: "SIGKILL", downMs: 3_000 })),
        );
        yield* eventually("the broken watch and the probes to go unanswered", () => counter.lostForMs() > 0);
        yield* Effect.promise(() => restart);
        yield* Effect.promise(() => t.create(namespace, "after"));
        yield* eventually(
          "the task created after the restart",
          () => informer.get(namespace, "after") !== undefined,
        );
        assert.strictEqual(counter.lostForMs(), 0);
        // At least the watch the SIGKILL cut. Often a second: /readyz may answer before this resource's
        // storage has initialised, and the next watch then gets 429 "storage is (re)initializing"; the
        // probe ends that backoff too (one hour each, so neither was waited out).
        assert.isAtLeast(faults.count("watch", "failed"), 1);
        yield* Scope.close(scope, Exit.void);
      }).pipe(Effect.provide(Logger.layer([]))),
    120_000,
  );
});
