/**
 * A list-watch cache of one namespaced custom resource (in one namespace or all), over opstask's
 * `KubeClient` (why not client-node's informer: docs/design-notes.md §8).
 *
 * LIST, then WATCH from its resourceVersion with bookmarks. A 410 relists; a watch the server closed
 * reconnects at once; an error or a stall (watchdog) reconnects after a jittered backoff that a
 * `GET /readyz` probe cuts short. A relist emits objects that vanished meanwhile as synthetic DELETED.
 * Objects the controller wrote enter through `upsert`; an older event then updates nothing but is still
 * emitted, and a replayed one is dropped. Echoes of our own writes are emitted unless
 * `echoes: "suppress"` (docs/design-notes.md §5). The loop and its reasons: docs/design-notes.md §11.
 */
import type * as Cause from "effect/Cause";
import * as Clock from "effect/Clock";
import * as Deferred from "effect/Deferred";
import * as Duration from "effect/Duration";
import * as Effect from "effect/Effect";
import * as Option from "effect/Option";
import * as Predicate from "effect/Predicate";
import * as Queue from "effect/Queue";
import * as Random from "effect/Random";
import * as Result from "effect/Result";
import type * as Scope from "effect/Scope";
import * as Stream from "effect/Stream";
import { KubeFaults } from "../interpreters/kubernetes/fault-counter.ts";
import { apiPath } from "../kube/api-path.ts";
import { kubeRequest, type RequestSettings } from "../kube/client.ts";
import { fromStatus, type KubeError, toKubeError } from "../kube/errors.ts";
import { type KubeAccess, kubeClientOf } from "../kube/kube-client-node.ts";
import { compareResourceVersions, isKubeObject, type KubeObject, keyOf, objectKey } from "../kube/object.ts";
import { RequestCounter } from "../kube/request-metrics.ts";
import type { ResourceRef } from "../reconcile/task-kind.ts";
import { cacheObject } from "./cache-object.ts";

export type ChangeType = "ADDED" | "MODIFIED" | "DELETED";

export interface Change {
  readonly type: ChangeType;
  /**
   * `namespace/name`, the very string the cache is keyed by: a consumer that keeps per-object state keys
   * it with this one, so 10,000 cached objects hold one key string each, not one per table.
   */
  readonly key: string;
  /**
   * ADDED/MODIFIED: the cached object after the change (the freshest known state, which may be a newer
   * upserted write than the event itself). DELETED: the object's last state (from the watch event, or
   * the last cached one for a delete found by a relist).
   */
  readonly object: KubeObject;
}

export interface InformerOptions {
  readonly kubeConfig: KubeAccess;
  readonly resource: Pick<ResourceRef, "group" | "version" | "plural">;
  /** Watch one namespace; all namespaces when absent. */
  readonly namespace?: string;
  readonly labelSelector?: string;
  /** LIST page size (`limit`, default 500). */
  readonly pageSize?: number;
  /** The most bytes one LIST page is read to (default 4 MiB; see `listAll`). */
  readonly pageBytes?: number;
  /**
   * The server closes each watch after `timeoutSeconds`, drawn from [T, 2T) like client-go's reflector
   * so that many watchers do not reconnect together (default T = 300).
   */
  readonly watchTimeoutSeconds?: number;
  /**
   * A watch that has said nothing for this long and is this long past its `timeoutSeconds`, when the
   * server should have closed it, is considered dead (a half-open connection, a hung server) and
   * restarted (default 120 s). Silence alone is no sign: the apiserver sends bookmarks only once the
   * resource has moved past the watch's resourceVersion, so a watch of objects that do not change
   * hears nothing until the server closes it.
   */
  readonly watchdog?: Duration.Input;
  /** Restart backoff: first delay (default 200 ms), doubled per failure up to `max` (default 30 s), ±50 % jitter. */
  readonly backoff?: { readonly initial: Duration.Input; readonly max: Duration.Input };
  /** While backing off after the API server did not answer, probe it this often (default 1 s). */
  readonly probeInterval?: Duration.Input;
  /** Bound on one LIST page (default 60 s). */
  readonly requestTimeout?: Duration.Input;
  /** Count LIST/WATCH requests here (default: a counter of its own, see `stats`). */
  readonly counter?: RequestCounter;
  readonly echoes?: "emit" | "suppress";
  /** What the cache keeps of each object (default `cacheObject`: all but managedFields, strings shared). */
  readonly keep?: (object: KubeObject) => KubeObject;
  /** Sees every listed or watched object as the server sent it, before the cache drops parts of it. */
  readonly inspect?: (object: KubeObject) => void;
  /**
   * Test hook: runs before every watch starts and returns the resourceVersion to watch from. A test can
   * hold the watch (to change objects while nobody watches) and return an expired version to force a 410.
   */
  readonly beforeWatch?: (resourceVersion: string) => Effect.Effect<string>;
}

export interface InformerStats {
  /** Complete LISTs (all pages), the first one included. */
  readonly lists: number;
  /** Watch requests started. */
  readonly watches: number;
  /** Watches ended by 410 Gone (each followed by a relist). */
  readonly expired: number;
  /** Watches restarted by the inactivity watchdog. */
  readonly stalls: number;
  /** Failed LISTs and watches. */
  readonly failures: number;
  /** ADDED/MODIFIED/DELETED watch events received (including replays that changed nothing). */
  readonly events: number;
  readonly bookmarks: number;
  /** Watch events or list items that were not namespaced objects (ignored). */
  readonly malformed: number;
}

export interface Informer {
  /** The cached object, if any. */
  readonly get: (namespace: string, name: string) => KubeObject | undefined;
  /** Every cached object (of one namespace, if given). */
  readonly list: (namespace?: string) => ReadonlyArray<KubeObject>;
  /** The keys (`namespace/name`) of every cached object. */
  readonly keys: () => ReadonlyArray<string>;
  /** Completes once the first LIST is in the cache (never, while LIST keeps failing: retried, logged). */
  readonly synced: Effect.Effect<void>;
  /**
   * Changes from the moment of subscription, after a synthetic ADDED for every object then cached (as
   * client-go's AddEventHandler does): a subscriber sees each object at least once, in its current
   * state, without a race between subscribing and listing. Ends when the informer's scope closes.
   */
  readonly changes: Stream.Stream<Change>;
  /**
   * Read-your-writes: puts an object a write returned into the cache, unless the cache already holds
   * that or a newer version, or does not hold the object at all (deleted meanwhile: taking it would
   * bring back a ghost), or holds another object (UID) of that name. Emits nothing. Returns whether
   * the cache took it.
   */
  readonly upsert: (object: KubeObject) => boolean;
  /** Ends the current watch (or the next one, if none is open) and starts a new one (diagnostics, tests). */
  readonly restartWatch: Effect.Effect<void>;
  /** The resourceVersion the next watch would start from (undefined before the first LIST). */
  readonly resourceVersion: () => string | undefined;
  readonly stats: () => InformerStats;
}

interface Entry {
  object: KubeObject;
  /** The resourceVersion of the last list item or watch event for this object ("" if none yet). */
  delivered: string;
  /** resourceVersions of our own writes not yet seen on the watch (absent: none; most entries). */
  own?: Set<string> | undefined;
}

type SessionEnd =
  | { readonly _tag: "Closed" }
  | { readonly _tag: "Expired" }
  | { readonly _tag: "Failed"; readonly error: KubeError }
  | { readonly _tag: "Stalled" }
  | { readonly _tag: "Restart" };

interface ListResult {
  readonly items: ReadonlyArray<KubeObject>;
  readonly resourceVersion: string;
}

/** A watch counts as having worked (and resets the backoff) after an event or this long open. */
const healthyAfterMs = 1000;

const maxOwnWrites = 16;

export const makeInformer = (options: InformerOptions): Effect.Effect<Informer, never, Scope.Scope> =>
  Effect.gen(function* () {
    const { group, version, plural } = options.resource;
    const namespace = options.namespace;
    const counter = options.counter ?? new RequestCounter();
    const settings: RequestSettings = { counter, timeout: options.requestTimeout ?? Duration.seconds(60) };
    const pageSize = options.pageSize ?? 500;
    const pageBytes = options.pageBytes ?? 4 * 1024 * 1024;
    const kept = options.keep ?? cacheObject;
    const timeoutBase = Math.max(1, Math.floor(options.watchTimeoutSeconds ?? 300));
    const watchdogMs = Duration.toMillis(Duration.fromInputUnsafe(options.watchdog ?? Duration.seconds(120)));
    const backoffInitialMs = Duration.toMillis(
      Duration.fromInputUnsafe(options.backoff?.initial ?? Duration.millis(200)),
    );
    const backoffMaxMs = Duration.toMillis(
      Duration.fromInputUnsafe(options.backoff?.max ?? Duration.seconds(30)),
    );
    const probeIntervalMs = Duration.toMillis(
      Duration.fromInputUnsafe(options.probeInterval ?? Duration.seconds(1)),
    );
    const faults = Option.getOrUndefined(yield* Effect.serviceOption(KubeFaults));
    const suppressEchoes = options.echoes === "suppress";
    const client = kubeClientOf(options.kubeConfig);
    const collectionPath = apiPath({ group, version, plural }, namespace);

    const cache = new Map<string, Entry>();
    const subscribers = new Set<Queue.Queue<Change, Cause.Done>>();
    let resourceVersion: string | undefined;
    let closed = false;
    /** Bumped by every event and bookmark; the watchdog looks for it to move. */
    let activity = 0;
    const stats = {
      lists: 0,
      watches: 0,
      expired: 0,
      stalls: 0,
      failures: 0,
      events: 0,
      bookmarks: 0,
      malformed: 0,
    };
    const synced = yield* Deferred.make<void>();
    let restartSignal = yield* Deferred.make<void>();

    const emit = (type: ChangeType, key: string, object: KubeObject): void => {
      const change: Change = { type, key, object };
      for (const queue of subscribers) Queue.offerUnsafe(queue, change);
    };

    /** Forgets own writes the watch has now passed. */
    const pruneOwn = (entry: Entry, seen: string): void => {
      const own = entry.own;
      if (own === undefined) return;
      for (const written of own) {
        const order = compareResourceVersions(written, seen);
        if (order === -1 || order === 0) own.delete(written);
      }
      if (own.size === 0 || own.size > maxOwnWrites) entry.own = undefined;
    };

    /** A list item, or a watch ADDED/MODIFIED. */
    const observe = (object: KubeObject, key = keyOf(object)): void => {
      const version = object.metadata.resourceVersion;
      const entry = cache.get(key);
      if (entry === undefined) {
        cache.set(key, { object, delivered: version });
        emit("ADDED", key, object);
        return;
      }
      if (entry.object.metadata.uid !== object.metadata.uid) {
        // Only a relist can show a re-created namesake without the DELETED of the old one.
        cache.set(key, { object, delivered: version });
        emit("DELETED", key, entry.object);
        emit("ADDED", key, object);
        return;
      }
      const versusDelivered = compareResourceVersions(version, entry.delivered);
      if (versusDelivered === 0 || versusDelivered === -1) return;
      entry.delivered = version;
      const versusCached = compareResourceVersions(version, entry.object.metadata.resourceVersion);
      if (versusCached === 1 || versusCached === undefined) entry.object = object;
      const echo = entry.own?.has(version) === true;
      pruneOwn(entry, version);
      if (echo && suppressEchoes) return;
      emit("MODIFIED", key, entry.object);
    };

    const observeDeleted = (object: KubeObject): void => {
      const key = keyOf(object);
      const entry = cache.get(key);
      if (entry === undefined) return;
      if (
        entry.object.metadata.uid !== object.metadata.uid &&
        compareResourceVersions(object.metadata.resourceVersion, entry.object.metadata.resourceVersion) === -1
      ) {
        return; // the cache already holds a newer namesake
      }
      cache.delete(key);
      emit("DELETED", key, object);
    };

    const applyList = (listed: ListResult): void => {
      // The first LIST (or one into an emptied cache) has nothing to sweep: every cached object is listed.
      const present = cache.size === 0 ? undefined : new Set<string>();
      for (const item of listed.items) {
        const key = keyOf(item);
        present?.add(key);
        observe(item, key);
      }
      if (present !== undefined)
        for (const [key, entry] of cache) {
          if (present.has(key)) continue;
          // Written by us after the list's snapshot: it existed then; the watch will tell the rest.
          if (compareResourceVersions(entry.object.metadata.resourceVersion, listed.resourceVersion) === 1)
            continue;
          cache.delete(key);
          emit("DELETED", key, entry.object);
        }
      resourceVersion = listed.resourceVersion;
    };

    const listPage = (continueToken: string | undefined, limit: number) => {
      const query = {
        limit,
        continue: continueToken,
        labelSelector: options.labelSelector,
      };
      // One object alone is read whole: the apiserver's bound on an object is the bound then, as for
      // a watch event.
      const maxAnswerBytes = limit > 1 ? pageBytes : undefined;
      return kubeRequest(settings, "list", client, {
        method: "GET",
        path: collectionPath,
        query,
        ...(maxAnswerBytes === undefined ? {} : { maxAnswerBytes }),
      });
    };

    /**
     * Every object, page by page. A page is bounded in bytes as well as in objects: the text of a page
     * of 500 objects of the apiserver's largest size (~1.5 MiB each, etcd's request limit) would be
     * ~750 MB, and the text, its parse and the copies all live at once. Reading stops once a page
     * passes `pageBytes` (the connection is dropped, the chunks freed), and the same continue token is
     * asked again for an eighth as many objects, down to one; after a page that fits, the next asks
     * for as many objects of that page's average size as fill 3/4 of the bound, if that is more (at
     * most `pageSize`): a page that fits never makes the next one smaller.
     * (Not a streaming parser: one in JavaScript is many times slower than JSON.parse under
     * --jitless on every page; this costs nothing where pages are small, and a few cut reads where
     * objects are large.)
     */
    const listAll: Effect.Effect<ListResult, KubeError> = Effect.gen(function* () {
      const items: KubeObject[] = [];
      let continueToken: string | undefined;
      let listVersion = "";
      let limit = pageSize;
      for (;;) {
        const page = yield* listPage(continueToken, limit);
        if (page.cutAt !== undefined) {
          limit = Math.max(1, Math.floor(limit / 8));
          continue;
        }
        const data: unknown = page.body;
        const metadata = Predicate.isObject(data) && "metadata" in data ? data.metadata : undefined;
        const pageItems = Predicate.isObject(data) && "items" in data ? data.items : undefined;
        if (Array.isArray(pageItems)) {
          if (pageItems.length > 0 && page.bytes !== undefined) {
            const perItem = Math.max(1, page.bytes / pageItems.length);
            limit = Math.min(pageSize, Math.max(limit, Math.floor((pageBytes * 0.75) / perItem)));
          }
          for (const item of pageItems) {
            if (isKubeObject(item)) {
              options.inspect?.(item);
              items.push(kept(item));
            } else stats.malformed += 1;
          }
        }
        const field = (name: string): string | undefined => {
          if (!Predicate.isObject(metadata) || !(name in metadata)) return undefined;
          const value: unknown = Reflect.get(metadata, name);
          return typeof value === "string" && value !== "" ? value : undefined;
        };
        listVersion = field("resourceVersion") ?? listVersion;
        continueToken = field("continue");
        if (continueToken === undefined) break;
      }
      stats.lists += 1;
      return { items, resourceVersion: listVersion };
    });

    /** One watch request, until the server ends it, it fails, or it is interrupted. */
    const watchSession = (from: string, timeoutSeconds: number) =>
      Effect.callback<SessionEnd>((resume) => {
        let controller: AbortController | undefined;
        let finished = false;
        let answered = false;
        const answer = (code: number): void => {
          if (answered) return;
          answered = true;
          counter.record("watch", code);
        };
        const finish = (end: SessionEnd): void => {
          if (finished) return;
          finished = true;
          controller?.abort();
          resume(Effect.succeed(end));
        };
        const onEvent = (type: string, object: unknown): void => {
          if (finished) return;
          if (type === "ERROR") {
            const error = fromStatus(object);
            finish(error.code === 410 ? { _tag: "Expired" } : { _tag: "Failed", error });
            return;
          }
          // Not for ERROR: a watch that only ever answers 410 must not count as working (no backoff).
          activity += 1;
          if (type === "BOOKMARK") {
            stats.bookmarks += 1;
            const version =
              Predicate.isObject(object) && "metadata" in object && Predicate.isObject(object.metadata)
                ? Reflect.get(object.metadata, "resourceVersion")
                : undefined;
            if (typeof version === "string" && version !== "") resourceVersion = version;
            return;
          }
          if (!isKubeObject(object)) {
            stats.malformed += 1;
            return;
          }
          stats.events += 1;
          if (type === "DELETED") observeDeleted(kept(object));
          else if (type === "ADDED" || type === "MODIFIED") {
            options.inspect?.(object);
            observe(kept(object));
          }
          resourceVersion = object.metadata.resourceVersion;
        };
        const onDone = (error: unknown): void => {
          if (error === null || error === undefined) {
            answer(200);
            finish({ _tag: "Closed" });
            return;
          }
          const kubeError = toKubeError(error);
          answer(kubeError.code);
          finish(kubeError.code === 410 ? { _tag: "Expired" } : { _tag: "Failed", error: kubeError });
        };
        const query = {
          resourceVersion: from,
          allowWatchBookmarks: true,
          timeoutSeconds,
          ...(options.labelSelector === undefined ? {} : { labelSelector: options.labelSelector }),
        };
        client.watch(collectionPath, query, onEvent, onDone).then(
          (started) => {
            controller = started;
            answer(200);
            if (finished) started.abort();
          },
          (error: unknown) => onDone(error ?? new Error("watch failed")),
        );
        return Effect.sync(() => {
          finished = true;
          controller?.abort();
        });
      });

    /**
     * Resolves when the session is dead: nothing arrived for `watchdogMs`, and the server has not
     * closed it `watchdogMs` after its `timeoutSeconds`. Not silence alone: the apiserver's watch cache
     * sends a bookmark only with a resourceVersion newer than the watch's own (cache_watcher.go skips
     * the rest), and that version moves only with the resource's own changes (or etcd's progress
     * notices, every 10 minutes by default); a watch of objects that do not change hears nothing until
     * the server ends it. One timer, set for the first moment the session could be dead: an idle
     * watch wakes nothing before the server closes it. (A peer that is gone is found sooner by TCP
     * keepalive: the kube client's watch sockets come from a keep-alive agent, and the kernel resets
     * them within ~11 s.)
     */
    const watchdog = (timeoutSeconds: number) =>
      Effect.gen(function* () {
        const startedAt = yield* Clock.currentTimeMillis;
        const overdueAt = startedAt + timeoutSeconds * 1000 + watchdogMs;
        let seen = activity;
        let quietSince = startedAt;
        for (;;) {
          const now = yield* Clock.currentTimeMillis;
          const due = Math.max(quietSince + watchdogMs, overdueAt);
          if (now < due) {
            yield* Effect.sleep(Math.max(1, due - now));
            continue;
          }
          if (activity === seen) return { _tag: "Stalled" } as const satisfies SessionEnd;
          // Something arrived since: the silence is counted from now (at most `watchdogMs` late).
          seen = activity;
          quietSince = now;
        }
      });

    /** The server is there (an answer below 500; 401/403 included: it answered). */
    const probe = kubeRequest({ counter, timeout: Duration.seconds(5) }, "get", client, {
      method: "GET",
      path: "/readyz",
    }).pipe(
      Effect.as(true),
      Effect.catch((error) => Effect.succeed(error.code !== 0 && error.code < 500)),
    );
    const probeUntilAnswered = Effect.gen(function* () {
      for (;;) {
        yield* Effect.sleep(probeIntervalMs);
        if (yield* probe) return "probed" as const;
      }
    });

    /**
     * Waits the jittered backoff for `failures`; with `probing`, ends early ("probed") once the API
     * server answers a probe, and the caller resets its failure count.
     */
    const backoff = (failures: number, probing = false) =>
      Effect.gen(function* () {
        const base = Math.min(backoffMaxMs, backoffInitialMs * 2 ** Math.min(failures, 30));
        const jitter = yield* Random.next;
        const delay = Effect.sleep(Math.round(base * (0.5 + jitter))).pipe(Effect.as("waited" as const));
        return yield* probing && base > probeIntervalMs ? Effect.raceFirst(delay, probeUntilAnswered) : delay;
      });

    /**
     * No answer, a 5xx, or a 429 (which is also what a restarted apiserver says while its storage
     * initialises): the server is away or cannot serve this yet, not refusing this request. Without
     * the probe such a watch would wait out its whole backoff after the server is back.
     */
    const unanswered = (error: KubeError): boolean =>
      error.code === 0 || error.code === 429 || error.code >= 500;

    const describeEnd = (end: SessionEnd): string =>
      end._tag === "Failed" ? `${end.error.code} ${end.error.reason}: ${end.error.message}` : end._tag;

    /**
     * One LIST into the cache; false if it failed (logged). Its own generator: the list must not
     * outlive it in a frame of the long-running loop below (a relist would hold two copies at once).
     */
    const relist = Effect.gen(function* () {
      const listed = yield* Effect.result(listAll);
      if (Result.isFailure(listed)) {
        stats.failures += 1;
        faults?.record("list", "failed");
        const error = listed.failure;
        yield* Effect.logWarning(
          `informer ${plural}: list failed: ${error.code} ${error.reason}: ${error.message}`,
        );
        return error;
      }
      applyList(listed.success);
      return undefined;
    });

    const run = Effect.gen(function* () {
      let failures = 0;
      let needList = true;
      for (;;) {
        /** This watch starts from the resourceVersion of a LIST just made. */
        const fromFreshList = needList || resourceVersion === undefined;
        if (fromFreshList) {
          const listError = yield* relist;
          if (listError !== undefined) {
            const waited = yield* backoff(failures, unanswered(listError));
            failures = waited === "probed" ? 0 : failures + 1;
            continue;
          }
          needList = false;
          yield* Deferred.succeed(synced, undefined);
        }
        const current = resourceVersion ?? "";
        const from = options.beforeWatch === undefined ? current : yield* options.beforeWatch(current);
        const timeoutSeconds = timeoutBase + Math.floor((yield* Random.next) * timeoutBase);
        const activityBefore = activity;
        const startedAt = yield* Clock.currentTimeMillis;
        stats.watches += 1;
        const end: SessionEnd = yield* Effect.raceAll([
          watchSession(from, timeoutSeconds),
          watchdog(timeoutSeconds),
          Deferred.await(restartSignal).pipe(Effect.as({ _tag: "Restart" } as const)),
        ]);
        const healthy =
          activity > activityBefore || (yield* Clock.currentTimeMillis) - startedAt >= healthyAfterMs;
        if (healthy) failures = 0;
        switch (end._tag) {
          case "Restart":
            restartSignal = yield* Deferred.make<void>();
            continue;
          case "Closed":
            if (healthy) continue;
            break;
          case "Expired":
            stats.expired += 1;
            faults?.record("watch", "expired");
            needList = true;
            // Not routine (the apiserver's watch cache or etcd compaction passed our resourceVersion):
            // a relist of everything follows, which an operator may want to correlate.
            yield* Effect.logWarning(
              `informer ${plural}: watch expired (410 Gone) at resourceVersion ${current}; relisting`,
            );
            // At once, unless the watch from a fresh LIST expired at once: a server that keeps doing
            // that would otherwise be relisted in a tight loop.
            if (healthy || !fromFreshList) continue;
            break;
          case "Stalled":
            stats.stalls += 1;
            break;
          case "Failed":
            stats.failures += 1;
            faults?.record("watch", "failed");
            break;
        }
        const message = `informer ${plural}: watch ended (${describeEnd(end)}); backing off`;
        yield* end._tag === "Failed" || end._tag === "Stalled"
          ? Effect.logWarning(message)
          : Effect.logDebug(message);
        // A stalled watch may be a half-open connection to a server that is fine: a probe tells.
        const probing = end._tag === "Stalled" || (end._tag === "Failed" && unanswered(end.error));
        const waited = yield* backoff(failures, probing);
        failures = waited === "probed" ? 0 : failures + 1;
      }
    });

    yield* Effect.forkScoped(run);
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        closed = true;
        for (const queue of subscribers) Queue.endUnsafe(queue);
        subscribers.clear();
      }),
    );

    const changes = Stream.callback<Change>((queue) =>
      Effect.acquireRelease(
        Effect.sync(() => {
          if (closed) {
            Queue.endUnsafe(queue);
            return;
          }
          for (const [key, entry] of cache)
            Queue.offerUnsafe(queue, { type: "ADDED", key, object: entry.object });
          subscribers.add(queue);
        }),
        () => Effect.sync(() => subscribers.delete(queue)),
      ),
    );

    const informer: Informer = {
      get: (ns, name) => cache.get(objectKey(ns, name))?.object,
      keys: () => [...cache.keys()],
      list: (ns) =>
        [...cache.values()]
          .map((entry) => entry.object)
          .filter((object) => ns === undefined || object.metadata.namespace === ns),
      synced: Deferred.await(synced),
      changes,
      upsert: (written) => {
        const object = kept(written);
        const key = keyOf(object);
        const version = object.metadata.resourceVersion;
        const entry = cache.get(key);
        // Not cached: deleted since the controller read it; taking it would resurrect a ghost.
        if (entry === undefined) return false;
        if (entry.object.metadata.uid !== object.metadata.uid) return false;
        const order = compareResourceVersions(version, entry.object.metadata.resourceVersion);
        if (order === 0 || order === -1) return false;
        entry.object = object;
        entry.own ??= new Set();
        entry.own.add(version);
        if (entry.own.size > maxOwnWrites) entry.own = undefined;
        return true;
      },
      restartWatch: Effect.suspend(() => Deferred.succeed(restartSignal, undefined)).pipe(Effect.asVoid),
      resourceVersion: () => resourceVersion,
      stats: () => ({ ...stats }),
    };
    return informer;
  });
