// TaskWriter and EventRecorder against a real kube-apiserver with etcd-druid's EtcdOpsTask CRD: the
// preconditions do what the memory model (src/interpreters/memory/api-server.ts) says they do.
import { assert, describe, it } from "@effect/vitest";
import { EventsV1Api } from "@kubernetes/client-node";
import { Effect, Result } from "effect";
import { EventRecorder } from "../../src/interpreters/kubernetes/event-recorder.ts";
import { KubeRequests, kubernetesLayer } from "../../src/interpreters/kubernetes/layer.ts";
import { TaskWriter } from "../../src/interpreters/kubernetes/task-writer.ts";
import type { KubeObject } from "../../src/kube/object.ts";
import { machineVersionAnnotation } from "../../src/reconcile/task-kind.ts";
import { createTestNamespace, druidCrds, useControlPlane } from "../support/cluster.ts";
import { resource, tasks } from "./fixtures.ts";

const cluster = useControlPlane({ crds: druidCrds });
const ours = "druid.gardener.cloud/etcdopstask";
const foreign = "example.com/keep-me";

/** Runs `program` with the layer on the cluster, in a fresh namespace. */
const withCluster = <A, E>(
  program: (
    namespace: string,
    t: ReturnType<typeof tasks>,
  ) => Effect.Effect<A, E, TaskWriter | EventRecorder | KubeRequests>,
) =>
  Effect.gen(function* () {
    const kc = cluster().makeKubeConfig();
    const namespace = yield* Effect.promise(() => createTestNamespace(kc, "writer"));
    return yield* program(namespace, tasks(kc)).pipe(
      Effect.provide(kubernetesLayer({ kubeConfig: kc, resource, reportingInstance: "writer-test" })),
    );
  });

const target = (object: KubeObject) => object.metadata;
const promise = <A>(f: () => Promise<A>) => Effect.promise(f);

describe("addFinalizer / removeFinalizer: metadata merge patch with a resourceVersion precondition", () => {
  it.live("adds ours after a foreign one and stamps the machine version", () =>
    withCluster((ns, t) =>
      Effect.gen(function* () {
        const created = yield* promise(() => t.create(ns, "a", [foreign]));
        const writer = yield* TaskWriter;
        const written = yield* writer.addFinalizer(target(created), ours, 3);
        assert.deepStrictEqual(written.metadata.finalizers, [foreign, ours]);
        assert.strictEqual(
          (written.metadata.annotations as Record<string, string>)[machineVersionAnnotation],
          "3",
        );
        assert.notStrictEqual(written.metadata.resourceVersion, created.metadata.resourceVersion);
        const removed = yield* writer.removeFinalizer(target(written), ours);
        assert.deepStrictEqual(removed.metadata.finalizers, [foreign]);
        assert.strictEqual((yield* KubeRequests).count("patch", 200), 2);
      }),
    ),
  );

  it.live("a change since the read (a label edit) is a Conflict, not retried, and nothing is written", () =>
    withCluster((ns, t) =>
      Effect.gen(function* () {
        const created = yield* promise(() => t.create(ns, "b"));
        yield* promise(() => t.patch(ns, "b", { metadata: { finalizers: [foreign] } }));
        const writer = yield* TaskWriter;
        const added = yield* Effect.result(writer.addFinalizer(target(created), ours, 1));
        assert.isTrue(Result.isFailure(added) && added.failure.reason === "Conflict");
        const stored = yield* promise(() => t.get(ns, "b"));
        assert.deepStrictEqual(stored.metadata.finalizers, [foreign]);
        const removed = yield* Effect.result(writer.removeFinalizer(target(created), foreign));
        assert.isTrue(Result.isFailure(removed) && removed.failure.code === 409);
        assert.strictEqual((yield* KubeRequests).count("patch", 409), 2);
        assert.strictEqual((yield* KubeRequests).count("patch"), 2);
      }),
    ),
  );

  it.live("removing the last finalizer of a deleting object removes it", () =>
    withCluster((ns, t) =>
      Effect.gen(function* () {
        const created = yield* promise(() => t.create(ns, "c", [ours]));
        const writer = yield* TaskWriter;
        const deleting = yield* writer.deleteTask(target(created));
        assert.isDefined(deleting?.metadata.deletionTimestamp);
        if (deleting === undefined) return;
        const last = yield* writer.removeFinalizer(target(deleting), ours);
        assert.deepStrictEqual(last.metadata.finalizers ?? [], []);
        assert.isFalse(yield* promise(() => t.exists(ns, "c")));
      }),
    ),
  );
});

/** A status write's target: the object as read, with whether it had a status. */
const statusTarget = (object: KubeObject) => ({ ...object.metadata, hasStatus: object.status !== undefined });

describe("patchStatus: JSON patch of the changed fields, guarded by the UID", () => {
  it.live("the first write adds the whole status, preconditioned on the resourceVersion", () =>
    withCluster((ns, t) =>
      Effect.gen(function* () {
        const created = yield* promise(() => t.create(ns, "d"));
        const edited = yield* promise(() => t.patch(ns, "d", { metadata: { labels: { edited: "yes" } } }));
        const writer = yield* TaskWriter;
        const stale = yield* Effect.result(writer.patchStatus(statusTarget(created), { state: "Pending" }));
        assert.isTrue(Result.isFailure(stale) && stale.failure.reason === "Conflict");
        assert.isUndefined((yield* promise(() => t.get(ns, "d"))).status);
        const first = yield* writer.patchStatus(statusTarget(edited), {
          state: "Pending",
          lastTransitionTime: "2026-11-22T00:00:00Z",
          startedAt: null,
        });
        assert.deepStrictEqual(first.status, {
          state: "Pending",
          lastTransitionTime: "2026-11-22T00:00:00Z",
        });
        assert.strictEqual((first.metadata.labels as Record<string, string>).edited, "yes");
      }),
    ),
  );

  it.live(
    "later writes change single fields without a resourceVersion precondition; null removes a field",
    () =>
      withCluster((ns, t) =>
        Effect.gen(function* () {
          yield* promise(() => t.create(ns, "later"));
          const read = yield* promise(() =>
            t.patchStatus(ns, "later", { state: "Pending", lastTransitionTime: "2026-11-22T00:00:00Z" }),
          );
          yield* promise(() => t.patch(ns, "later", { metadata: { labels: { edited: "yes" } } }));
          const writer = yield* TaskWriter;
          const second = yield* writer.patchStatus(statusTarget(read), {
            lastTransitionTime: null,
            state: "InProgress",
          });
          assert.deepStrictEqual(second.status, { state: "InProgress" });
          assert.strictEqual((second.metadata.labels as Record<string, string>).edited, "yes");
          const third = yield* writer.patchStatus(statusTarget(read), { startedAt: "2026-11-22T00:00:01Z" });
          assert.deepStrictEqual(third.status, { state: "InProgress", startedAt: "2026-11-22T00:00:01Z" });
        }),
      ),
  );

  it.live("a status written by someone else since a read without one is a Conflict, and is kept", () =>
    withCluster((ns, t) =>
      Effect.gen(function* () {
        const created = yield* promise(() => t.create(ns, "s"));
        yield* promise(() => t.patchStatus(ns, "s", { state: "Pending" }));
        const writer = yield* TaskWriter;
        const stale = yield* Effect.result(
          writer.patchStatus(statusTarget(created), { lastTransitionTime: "2026-11-22T00:00:00Z" }),
        );
        assert.isTrue(Result.isFailure(stale) && stale.failure.reason === "Conflict");
        assert.deepStrictEqual((yield* promise(() => t.get(ns, "s"))).status, { state: "Pending" });
        assert.strictEqual((yield* KubeRequests).count("patch", 422), 1);
      }),
    ),
  );

  it.live("a missing object is NotFound; a validation failure is Invalid; neither is retried", () =>
    withCluster((ns, t) =>
      Effect.gen(function* () {
        const created = yield* promise(() => t.create(ns, "e"));
        const writer = yield* TaskWriter;
        const invalid = yield* Effect.result(writer.patchStatus(statusTarget(created), { state: "Bogus" }));
        assert.isTrue(Result.isFailure(invalid) && invalid.failure.reason === "Invalid");
        if (Result.isFailure(invalid)) assert.include(invalid.failure.message, "status.state");
        const missing = yield* Effect.result(
          writer.patchStatus({ ...statusTarget(created), name: "nope" }, { state: "Pending" }),
        );
        assert.isTrue(Result.isFailure(missing) && missing.failure.reason === "NotFound");
        assert.strictEqual((yield* KubeRequests).count("patch"), 2);
      }),
    ),
  );

  it.live(
    "a late write for the old UID of a re-created name is a Conflict and leaves the namesake alone",
    () =>
      withCluster((ns, t) =>
        Effect.gen(function* () {
          const old = yield* promise(() => t.create(ns, "h"));
          const oldWithStatus = yield* promise(() => t.patchStatus(ns, "h", { state: "InProgress" }));
          yield* promise(() => t.delete(ns, "h"));
          const namesake = yield* promise(() => t.create(ns, "h"));
          const writer = yield* TaskWriter;
          for (const target of [statusTarget(old), statusTarget(oldWithStatus)]) {
            const result = yield* Effect.result(writer.patchStatus(target, { state: "Succeeded" }));
            assert.isTrue(Result.isFailure(result) && result.failure.reason === "Conflict");
          }
          const stored = yield* promise(() => t.get(ns, "h"));
          assert.isUndefined(stored.status);
          assert.strictEqual(stored.metadata.resourceVersion, namesake.metadata.resourceVersion);
          assert.strictEqual((yield* KubeRequests).count("patch", 422), 2);
        }),
      ),
  );
});

describe("deleteTask: DELETE with a UID precondition", () => {
  it.live("without finalizers the object is gone at once", () =>
    withCluster((ns, t) =>
      Effect.gen(function* () {
        const created = yield* promise(() => t.create(ns, "f"));
        const writer = yield* TaskWriter;
        assert.isUndefined(yield* writer.deleteTask(target(created)));
        assert.isFalse(yield* promise(() => t.exists(ns, "f")));
        assert.isUndefined(yield* writer.deleteTask(target(created)));
      }),
    ),
  );

  it.live("never deletes a re-created namesake", () =>
    withCluster((ns, t) =>
      Effect.gen(function* () {
        const old = yield* promise(() => t.create(ns, "g"));
        yield* promise(() => t.delete(ns, "g"));
        const namesake = yield* promise(() => t.create(ns, "g"));
        const writer = yield* TaskWriter;
        assert.isUndefined(yield* writer.deleteTask(target(old)));
        const stored = yield* promise(() => t.get(ns, "g"));
        assert.strictEqual(stored.metadata.uid, namesake.metadata.uid);
        assert.isUndefined(stored.metadata.deletionTimestamp);
        assert.strictEqual((yield* KubeRequests).count("delete", 409), 1);
      }),
    ),
  );
});

describe("EventRecorder", () => {
  it.live("creates an events.k8s.io/v1 Event regarding the task", () =>
    withCluster((ns, t) =>
      Effect.gen(function* () {
        const created = yield* promise(() => t.create(ns, "i"));
        const recorder = yield* EventRecorder;
        yield* recorder.record(target(created), {
          type: "Normal",
          reason: "Admitted",
          note: "admitted: no peer",
        });
        // Best effort: a namespace that does not exist fails on the server, not here.
        yield* recorder.record(
          { ...target(created), namespace: "does-not-exist" },
          { type: "Warning", reason: "Lost", note: "x" },
        );
        const events = yield* promise(() =>
          cluster().makeKubeConfig().makeApiClient(EventsV1Api).listNamespacedEvent({ namespace: ns }),
        );
        assert.strictEqual(events.items.length, 1);
        const event = events.items[0];
        assert.strictEqual(event?.reason, "Admitted");
        assert.strictEqual(event?.action, "Admitted");
        assert.strictEqual(event?.note, "admitted: no peer");
        assert.strictEqual(event?.type, "Normal");
        assert.strictEqual(event?.reportingController, "opstask");
        assert.strictEqual(event?.reportingInstance, "writer-test");
        assert.deepStrictEqual(event?.regarding, {
          apiVersion: "druid.gardener.cloud/v1alpha1",
          kind: "EtcdOpsTask",
          name: "i",
          namespace: ns,
          uid: created.metadata.uid,
          resourceVersion: created.metadata.resourceVersion,
        });
        assert.match(String(event?.metadata?.name), /^i\./);
        assert.strictEqual((yield* KubeRequests).count("create", 201), 1);
        assert.strictEqual((yield* KubeRequests).count("create", 404), 1);
      }),
    ),
  );
});
