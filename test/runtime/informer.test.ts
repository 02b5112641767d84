// The list-watch cache against a real kube-apiserver: initial paginated LIST, watch events, relist on a
// real 410 with synthetic deletes, periodic server-side closes, the watchdog, read-your-writes, and a
// clean end when its scope closes.

import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { assert, describe, it } from "@effect/vitest";
import { KubeConfig, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import { Deferred, Effect, Exit, Fiber, Scope, Stream } from "effect";
import type { KubeObject } from "../../src/kube/object.ts";
import { compareResourceVersions } from "../../src/kube/object.ts";
import { RequestCounter } from "../../src/kube/request-metrics.ts";
import {
  type Change,
  type Informer,
  type InformerOptions,
  makeInformer,
} from "../../src/runtime/informer.ts";
import { resource, tasks } from "../kube/fixtures.ts";
import { forwardToApiserver } from "../support/apiserver-forward.ts";
import { createTestNamespace, druidCrds, useControlPlane } from "../support/cluster.ts";

const cluster = useControlPlane({ crds: druidCrds });

const promise = <A>(f: () => Promise<A>) => Effect.promise(f);

/** Polls `check` every 20 ms until it holds (fails the test after `timeoutMs`). */
const eventually = (what: string, check: () => boolean, timeoutMs = 10_000) =>
  Effect.gen(function* () {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      if (Date.now() > deadline) return yield* Effect.die(new Error(`timed out waiting for ${what}`));
      yield* Effect.sleep(20);
    }
  });

/**
 * A plain-HTTP proxy to the apiserver that forwards watch events but not a watch's end: the server
 * closes each watch at its timeoutSeconds, and the client keeps hearing nothing on a connection that
 * stays open, as through a half-open connection or a hung server.
 */
const endlessWatchProxy = async (upstream: string, caPem: string) => {
  const target = new URL(upstream);
  const server = createServer((incoming, outgoing) => {
    const watch = new URL(incoming.url ?? "/", "http://proxy").searchParams.get("watch") === "true";
    forwardToApiserver(target, caPem, incoming, outgoing, (answer) => {
      outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(outgoing, { end: !watch });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};

const kubeConfigFor = (server: string, token: string): KubeConfig => {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    // client-node takes plain HTTP (the proxy on 127.0.0.1) only with skipTLSVerify.
    clusters: [{ name: "proxy", server, skipTLSVerify: true }],
    users: [{ name: "admin", token }],
    contexts: [{ name: "proxy", cluster: "proxy", user: "admin" }],
    currentContext: "proxy",
  });
  return kc;
};

const names = (objects: ReadonlyArray<KubeObject>) => objects.map((o) => o.metadata.name).sort();
/** Each change's type and name; a key that is not its object's `namespace/name` shows as a mismatch. */
const summary = (changes: ReadonlyArray<Change>) =>
  changes.map((c) =>
    c.key === `${c.object.metadata.namespace}/${c.object.metadata.name}`
      ? `${c.type} ${c.object.metadata.name}`
      : `${c.type} key ${c.key} of ${c.object.metadata.name}`,
  );
const label = (object: KubeObject | undefined, key: string) =>
  (object?.metadata.labels as Record<string, string> | undefined)?.[key];

/** Starts an informer in a scope of its own, and a subscriber collecting its changes. */
const start = (
  options: Omit<InformerOptions, "kubeConfig" | "resource"> & { readonly kubeConfigOf?: () => KubeConfig },
) =>
  Effect.gen(function* () {
    const scope = yield* Scope.make();
    const counter = new RequestCounter();
    const { kubeConfigOf, ...rest } = options;
    const informer = yield* makeInformer({
      kubeConfig: kubeConfigOf?.() ?? cluster().makeKubeConfig(),
      resource,
      counter,
      ...rest,
    }).pipe(Scope.provide(scope));
    const changes: Change[] = [];
    const consumer = yield* Effect.forkChild(
      informer.changes.pipe(Stream.runForEach((change) => Effect.sync(() => void changes.push(change)))),
    );
    yield* informer.synced;
    return { informer, changes, consumer, counter, close: Scope.close(scope, Exit.void) };
  });

/**
 * A `beforeWatch` hook that can hold the next watch: `hold()` makes the next watch wait until
 * `release()`, so that the test can change objects while nobody watches; the held watch then starts
 * from `from(resourceVersion)`.
 */
const holdable = (from: (resourceVersion: string) => string) =>
  Effect.gen(function* () {
    let gate: { entered: Deferred.Deferred<void>; release: Deferred.Deferred<void> } | undefined;
    const beforeWatch = (resourceVersion: string) =>
      Effect.gen(function* () {
        const current = gate;
        if (current === undefined) return resourceVersion;
        gate = undefined;
        yield* Deferred.succeed(current.entered, undefined);
        yield* Deferred.await(current.release);
        return from(resourceVersion);
      });
    /** Restarts the watch and returns once the new one is held. */
    const hold = (informer: Informer) =>
      Effect.gen(function* () {
        const current = { entered: yield* Deferred.make<void>(), release: yield* Deferred.make<void>() };
        gate = current;
        yield* informer.restartWatch;
        yield* Deferred.await(current.entered);
        return Deferred.succeed(current.release, undefined).pipe(Effect.asVoid);
      });
    return { beforeWatch, hold };
  });

/** The cache holds exactly what the server lists, at the same resourceVersions. */
const consistent = (informer: Informer, server: ReadonlyArray<KubeObject>, namespace: string): boolean => {
  const cached = informer.list(namespace);
  if (cached.length !== server.length) return false;
  return server.every(
    (o) =>
      informer.get(o.metadata.namespace, o.metadata.name)?.metadata.resourceVersion ===
      o.metadata.resourceVersion,
  );
};

describe("informer: list, watch, stream", () => {
  it.live("lists in pages, then follows creates, updates and deletes; the stream ends with the scope", () =>
    Effect.gen(function* () {
      const kc = cluster().makeKubeConfig();
      const t = tasks(kc);
      const ns = yield* promise(() => createTestNamespace(kc, "inf"));
      for (const name of ["a", "b", "c"]) yield* promise(() => t.create(ns, name));
      const started = Date.now();
      const { informer, changes, consumer, counter, close } = yield* start({ namespace: ns, pageSize: 2 });
      const syncMs = Date.now() - started;
      assert.deepStrictEqual(names(informer.list()), ["a", "b", "c"]);
      assert.strictEqual(counter.count("list", 200), 2); // two pages
      assert.isDefined(informer.resourceVersion());

      yield* promise(() => t.create(ns, "d"));
      yield* promise(() => t.patch(ns, "a", { metadata: { labels: { step: "1" } } }));
      yield* promise(() => t.delete(ns, "b"));
      yield* eventually("the three changes", () => changes.length >= 6);
      assert.deepStrictEqual(summary(changes), [
        "ADDED a",
        "ADDED b",
        "ADDED c",
        "ADDED d",
        "MODIFIED a",
        "DELETED b",
      ]);
      assert.deepStrictEqual(names(informer.list()), ["a", "c", "d"]);
      assert.strictEqual(label(informer.get(ns, "a"), "step"), "1");
      assert.isUndefined(informer.get(ns, "b"));

      // A late subscriber first gets the current objects as ADDED.
      const late = yield* informer.changes.pipe(Stream.take(3), Stream.runCollect);
      assert.deepStrictEqual(summary([...late]).sort(), ["ADDED a", "ADDED c", "ADDED d"]);

      yield* close;
      const exit = yield* Fiber.await(consumer);
      assert.isTrue(Exit.isSuccess(exit), "the stream ends (not interrupted) when the scope closes");
      assert.strictEqual(counter.count("watch", 200), 1);
      console.info(`informer synced in ${syncMs} ms`);
    }),
  );

  it.live("watches all namespaces when none is given", () =>
    Effect.gen(function* () {
      const kc = cluster().makeKubeConfig();
      const t = tasks(kc);
      const ns1 = yield* promise(() => createTestNamespace(kc, "all"));
      const ns2 = yield* promise(() => createTestNamespace(kc, "all"));
      yield* promise(() => t.create(ns1, "x"));
      const { informer, close } = yield* start({});
      yield* promise(() => t.create(ns2, "y"));
      yield* eventually("y", () => informer.get(ns2, "y") !== undefined);
      assert.deepStrictEqual(names(informer.list(ns1)), ["x"]);
      assert.deepStrictEqual(names(informer.list(ns2)), ["y"]);
      yield* close;
    }),
  );
});

describe("informer: relist after 410 Gone", () => {
  it.live("a watch from an expired resourceVersion relists and emits deletes for vanished objects", () =>
    Effect.gen(function* () {
      const kc = cluster().makeKubeConfig();
      const t = tasks(kc);
      const ns = yield* promise(() => createTestNamespace(kc, "gone"));
      for (const name of ["a", "b", "c"]) yield* promise(() => t.create(ns, name));
      // The held watch starts from revision 1, which the apiserver's watch cache no longer holds: a real 410.
      const gate = yield* holdable(() => "1");
      const { informer, changes, counter, close } = yield* start({
        namespace: ns,
        beforeWatch: gate.beforeWatch,
      });
      yield* eventually("3 ADDED", () => changes.length === 3);
      const release = yield* gate.hold(informer);
      // Nobody watches now: these changes are found by the relist.
      yield* promise(() => t.delete(ns, "b"));
      yield* promise(() => t.patch(ns, "a", { metadata: { labels: { step: "2" } } }));
      yield* promise(() => t.create(ns, "e"));
      yield* release;
      yield* eventually("the relist", () => changes.length >= 6);
      assert.deepStrictEqual(summary(changes.slice(3)).sort(), ["ADDED e", "DELETED b", "MODIFIED a"]);
      const deleted = changes.find((c) => c.type === "DELETED");
      assert.strictEqual(
        deleted?.object.metadata.name,
        "b",
        "the synthetic DELETED carries the last known state",
      );
      const stats = informer.stats();
      assert.strictEqual(stats.expired, 1);
      assert.strictEqual(stats.lists, 2);
      const server = yield* promise(() => Promise.all(["a", "c", "e"].map((n) => t.get(ns, n))));
      assert.isTrue(consistent(informer, server, ns));
      assert.strictEqual(counter.count("list", 200), 2);
      // The informer goes on watching after the relist.
      yield* promise(() => t.patch(ns, "c", { metadata: { labels: { after: "relist" } } }));
      yield* eventually("c after relist", () => label(informer.get(ns, "c"), "after") === "relist");
      yield* close;
    }),
  );
});

describe("informer: restarts", () => {
  it.live("a watch closed by the server every second (timeoutSeconds: 1) resumes without a relist", () =>
    Effect.gen(function* () {
      const kc = cluster().makeKubeConfig();
      const t = tasks(kc);
      const ns = yield* promise(() => createTestNamespace(kc, "short"));
      const { informer, close } = yield* start({ namespace: ns, watchTimeoutSeconds: 1 });
      for (let i = 0; i < 8; i += 1) {
        yield* promise(() => t.create(ns, `o${i}`));
        if (i > 0) yield* promise(() => t.patch(ns, `o${i - 1}`, { metadata: { labels: { i: String(i) } } }));
        yield* Effect.sleep(400);
      }
      const server = yield* promise(() => Promise.all([...Array(8).keys()].map((i) => t.get(ns, `o${i}`))));
      yield* eventually("the cache to catch up", () => consistent(informer, server, ns));
      const stats = informer.stats();
      assert.isAtLeast(stats.watches, 3);
      assert.strictEqual(stats.lists, 1);
      assert.strictEqual(stats.failures, 0);
      yield* close;
    }),
  );

  it.live(
    "a quiet watch is left alone until the server ends it: no bookmark comes for objects that do not change",
    () =>
      Effect.gen(function* () {
        const kc = cluster().makeKubeConfig();
        const ns = yield* promise(() => createTestNamespace(kc, "still"));
        yield* promise(() => tasks(kc).create(ns, "unchanging"));
        const { informer, close } = yield* start({
          namespace: ns,
          watchdog: "400 millis",
          watchTimeoutSeconds: 600,
        });
        // Many times the watchdog's 400 ms, with nothing changing: the apiserver sends nothing at all.
        yield* Effect.sleep(3000);
        assert.strictEqual(informer.stats().bookmarks, 0);
        assert.strictEqual(informer.stats().stalls, 0);
        assert.strictEqual(informer.stats().watches, 1);
        yield* close;
      }),
  );

  it.live(
    "the watchdog restarts a watch the server should have ended and that still says nothing, and the cache keeps up",
    () =>
      Effect.gen(function* () {
        const kc = cluster().makeKubeConfig();
        const t = tasks(kc);
        const ns = yield* promise(() => createTestNamespace(kc, "quiet"));
        const proxy = yield* Effect.acquireRelease(
          promise(() => endlessWatchProxy(cluster().server, cluster().caPem)),
          (opened) => promise(opened.close),
        );
        const { informer, close } = yield* start({
          namespace: ns,
          watchdog: "400 millis",
          watchTimeoutSeconds: 1,
          kubeConfigOf: () => kubeConfigFor(proxy.url, cluster().token),
        });
        yield* eventually("a stall", () => informer.stats().stalls >= 2, 10_000);
        yield* promise(() => t.create(ns, "late"));
        yield* eventually("late", () => informer.get(ns, "late") !== undefined);
        assert.strictEqual(informer.stats().lists, 1);
        yield* close;
      }).pipe(Effect.scoped),
  );
});

describe("informer: errors do not stop it", () => {
  it.live("a forbidden LIST is retried with backoff until access is granted", () =>
    Effect.gen(function* () {
      const admin = cluster().makeKubeConfig();
      const t = tasks(admin);
      const ns = yield* promise(() => createTestNamespace(admin, "rbac"));
      yield* promise(() => t.create(ns, "a"));
      const token = yield* promise(() => cluster().serviceAccountToken(ns, "reader"));
      const counter = new RequestCounter();
      const scope = yield* Scope.make();
      const informer = yield* makeInformer({
        kubeConfig: cluster().kubeConfigForToken(token),
        resource,
        namespace: ns,
        counter,
        backoff: { initial: "50 millis", max: "200 millis" },
      }).pipe(Scope.provide(scope));
      yield* eventually("a few forbidden lists", () => counter.count("list", 403) >= 3);
      assert.strictEqual(informer.list().length, 0);
      const rbac = admin.makeApiClient(RbacAuthorizationV1Api);
      yield* promise(() =>
        rbac.createNamespacedRole({
          namespace: ns,
          body: {
            metadata: { name: "reader" },
            rules: [{ apiGroups: [resource.group], resources: [resource.plural], verbs: ["list", "watch"] }],
          },
        }),
      );
      yield* promise(() =>
        rbac.createNamespacedRoleBinding({
          namespace: ns,
          body: {
            metadata: { name: "reader" },
            roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "reader" },
            subjects: [{ kind: "ServiceAccount", name: "reader", namespace: ns }],
          },
        }),
      );
      yield* informer.synced.pipe(Effect.timeout("10 seconds"));
      assert.deepStrictEqual(names(informer.list()), ["a"]);
      assert.isAtLeast(informer.stats().failures, 3);
      yield* Scope.close(scope, Exit.void);
    }),
  );
});

describe("informer: read-your-writes", () => {
  it.live("an upserted write is visible at once; older watch events never overwrite it", () =>
    Effect.gen(function* () {
      const kc = cluster().makeKubeConfig();
      const t = tasks(kc);
      const ns = yield* promise(() => createTestNamespace(kc, "ryw"));
      yield* promise(() => t.create(ns, "a"));
      const gate = yield* holdable((resourceVersion) => resourceVersion);
      const { informer, changes, close } = yield* start({ namespace: ns, beforeWatch: gate.beforeWatch });
      yield* eventually("a", () => changes.length === 1);
      // Hold the watch so that its events for the two writes arrive after our upsert.
      const release = yield* gate.hold(informer);
      const first = yield* promise(() => t.patch(ns, "a", { metadata: { labels: { w: "1" } } }));
      const second = yield* promise(() => t.patch(ns, "a", { metadata: { labels: { w: "2" } } }));
      assert.isTrue(informer.upsert(second));
      assert.isFalse(informer.upsert(first), "an older write is refused");
      assert.isFalse(informer.upsert(second), "the same version again changes nothing");
      assert.isFalse(
        informer.upsert({ ...second, metadata: { ...second.metadata, name: "unknown" } }),
        "an object the cache does not hold (deleted meanwhile) is refused",
      );
      assert.strictEqual(label(informer.get(ns, "a"), "w"), "2");
      const seen: string[] = [];
      const watcher = yield* Effect.forkChild(
        informer.changes.pipe(
          Stream.drop(1),
          Stream.take(2),
          Stream.runForEach((change) =>
            Effect.sync(() => {
              seen.push(
                `${change.type} ${label(change.object, "w")} cache=${label(informer.get(ns, "a"), "w")}`,
              );
            }),
          ),
        ),
      );
      yield* release;
      yield* Fiber.join(watcher);
      // Both deliveries are emitted (the controller may not have seen the first), each with the freshest
      // cached object, and the cache never went back to w=1.
      assert.deepStrictEqual(seen, ["MODIFIED 2 cache=2", "MODIFIED 2 cache=2"]);
      assert.strictEqual(informer.get(ns, "a")?.metadata.resourceVersion, second.metadata.resourceVersion);
      yield* close;
    }),
  );

  it.live('with echoes: "suppress", the watch event of our own write is not emitted', () =>
    Effect.gen(function* () {
      const kc = cluster().makeKubeConfig();
      const t = tasks(kc);
      const ns = yield* promise(() => createTestNamespace(kc, "echo"));
      yield* promise(() => t.create(ns, "a"));
      const gate = yield* holdable((resourceVersion) => resourceVersion);
      const { informer, changes, close } = yield* start({
        namespace: ns,
        echoes: "suppress",
        beforeWatch: gate.beforeWatch,
      });
      yield* eventually("a", () => changes.length === 1);
      // The echo of a write may arrive before its response; holding the watch orders them for the test.
      const release = yield* gate.hold(informer);
      const ours = yield* promise(() => t.patch(ns, "a", { metadata: { labels: { by: "us" } } }));
      assert.isTrue(informer.upsert(ours));
      yield* release;
      yield* promise(() => t.patch(ns, "a", { metadata: { labels: { by: "them" } } }));
      yield* eventually("their change", () => changes.length >= 2);
      yield* Effect.sleep(200); // nothing else follows
      assert.strictEqual(label(informer.get(ns, "a"), "by"), "them");
      assert.deepStrictEqual(
        changes.map((c) => `${c.type} ${label(c.object, "by") ?? "-"}`),
        ["ADDED -", "MODIFIED them"],
      );
      yield* close;
    }),
  );
});

describe("informer: shutdown", () => {
  it.live("closing the scope leaves no timer and no socket behind", () =>
    Effect.gen(function* () {
      const kc = cluster().makeKubeConfig();
      const ns = yield* promise(() => createTestNamespace(kc, "leak"));
      const count = (kind: string) => process.getActiveResourcesInfo().filter((r) => r === kind).length;
      yield* Effect.sleep(100);
      const timers = count("Timeout");
      const sockets = count("TCPSocketWrap");
      const { close } = yield* start({ namespace: ns, watchdog: "2 seconds" });
      yield* Effect.sleep(300);
      assert.isAbove(count("TCPSocketWrap"), sockets, "the watch holds a connection");
      yield* close;
      // undici may keep an idle connection for a few seconds; a watch's connection is aborted.
      yield* eventually(
        "timers and sockets to go",
        () => count("Timeout") <= timers && count("TCPSocketWrap") <= sockets,
        6000,
      );
    }),
  );
});

describe("resourceVersion ordering", () => {
  it.effect("decimal versions compare as integers; others only by equality", () =>
    Effect.sync(() => {
      assert.strictEqual(compareResourceVersions("9", "10"), -1);
      assert.strictEqual(compareResourceVersions("18446744073709551617", "18446744073709551616"), 1);
      assert.strictEqual(compareResourceVersions("42", "42"), 0);
      assert.strictEqual(compareResourceVersions("abc", "abc"), 0);
      assert.isUndefined(compareResourceVersions("abc", "10"));
      assert.isUndefined(compareResourceVersions("010", "10"));
      assert.isUndefined(compareResourceVersions("", "10"));
    }),
  );
});
