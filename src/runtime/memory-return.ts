/**
 * Keeps V8's heap near what the controller holds: while it works, a collection whenever the heap is
 * 4 MiB above what the last one left; once it is quiet, one full collection that gives the busy
 * period's memory back. Neither ever wakes an idle controller.
 *
 * While busy. V8 lets the old generation grow at least 8 MiB past the live size before collecting
 * (heap-controller.cc's minimum growing step, in every mode but one that memory-reducing collections
 * never reach), so a burst's committed heap peaked far above its live size, a large part of the
 * burst's peak RSS (bench/PROFILE.md). No flag shortens that step. From `hold()` on (the controller calls it
 * once its caches are filled: a takeover's LIST is mostly kept, and V8's incremental collections
 * cost it less CPU than full ones here), at each request the controller
 * starts (Node's diagnostics channel: no timer), a regular full collection runs
 * when the used heap is `busyHeadroomBytes` above the last collection's result. When one finds mostly
 * live data (a cache filling), the next waits for twice the growth, up to V8's own step, so a growing
 * cache is not collected over and over. Starting V8's incremental marking earlier instead
 * (`--incremental-marking-hard-trigger=25`) was measured side by side: a higher peak for more CPU
 * per task (bench/PROFILE.md).
 *
 * Once quiet. V8's own memory reducer does this job on a timer: it starts 8 s after a major
 * collection and then runs two more, wherever that lands —
 * after a burst, in the middle of the idle time that follows (bench/PROFILE.md). The Deployment turns
 * it off (`--no-memory-reducer`, src/cli/deploy/node-settings.ts) and this runs the one collection
 * instead, when the controller's own work says it is due: `quietMs` after the last request to the
 * apiserver (every pass, write, Event, LIST and takeover makes requests; an idle controller makes none
 * but the Lease's renewals), and only when V8's heap grew by `minGrowthBytes` since the last one, so a
 * Lease renewal or a single small task arms no timer at all.
 *
 * Hand-written because nothing in Node or V8 offers either: the reducer's delay is a fixed time after
 * a collection, not after the work, and V8's growing step is a constant. Runs only with `gc` (node's
 * `--expose-gc`) and V8's reducer off (`--no-memory-reducer` on node's command line: V8 reads it only
 * at start), as deployed; otherwise it does nothing and V8 does the job alone (with both, a
 * collection here would only start the reducer's own two).
 */
import * as diagnostics from "node:diagnostics_channel";
import { getHeapStatistics } from "node:v8";

export interface MemoryReturnOptions {
  /** How long without a request before collecting (default 1 s). */
  readonly quietMs?: number;
  /** Collect only when V8's committed heap grew at least this much since the last collection (default 1 MiB). */
  readonly minGrowthBytes?: number;
  /**
   * The collection (default: the `gc` that `--expose-gc` installs, as a full memory-reducing one, when
   * node runs with `--no-memory-reducer`).
   */
  readonly collect?: () => void;
  /** Whether V8's own reducer is off (default: node's command line has `--no-memory-reducer`). */
  readonly reducerOff?: boolean;
  /** V8's committed heap, bytes (default: `v8.getHeapStatistics().total_heap_size`). */
  readonly heapBytes?: () => number;
  /**
   * While requests are made: a regular full collection whenever V8's used heap is this much above what
   * the last collection left (default 4 MiB; 0 turns it off).
   */
  readonly busyHeadroomBytes?: number;
  /** V8's used heap, bytes (default: `v8.getHeapStatistics().used_heap_size`). */
  readonly usedBytes?: () => number;
  /**
   * The collection while busy (default: the exposed `gc` as a regular full collection, when node runs
   * with `--no-memory-reducer`; without one, nothing is collected while busy).
   */
  readonly collectBusy?: () => void;
  /** Told of each collection: what the heap held before and after, and its CPU time. */
  readonly onCollected?: (collected: {
    readonly beforeBytes: number;
    readonly afterBytes: number;
    readonly ms: number;
  }) => void;
}

export interface MemoryReturn {
  /** Whether collections run (false without `gc` or with V8's reducer on). */
  readonly active: boolean;
  /** Collections once quiet. */
  readonly collections: () => number;
  /** Collections while busy. */
  readonly busyCollections: () => number;
  /** Holds the heap within the headroom while busy from now on (the caches are filled). */
  hold(): void;
  stop(): void;
}

const MiB = 1024 * 1024;
/** V8's minimum growing step of the old generation's limit (heap-controller.cc), bytes. */
const v8GrowingStep = 8 * MiB;

/** Node's channel of every outgoing HTTP(S) request: the kube client's, the handlers', all. */
const requestStarts = "http.client.request.start";

type ExposedGc = (options: {
  readonly type: "major";
  readonly execution: "sync";
  readonly flavor: "regular" | "last-resort";
}) => void;

const exposedGc = (flavor: "regular" | "last-resort"): (() => void) | undefined => {
  const gc: unknown = Reflect.get(globalThis, "gc");
  if (typeof gc !== "function") return undefined;
  const collect = gc as ExposedGc;
  // "last-resort" (once quiet): V8's most thorough collection, which compacts and releases pages, as
  // the reducer's does; "regular" (while busy): one full collection.
  return () => collect({ type: "major", execution: "sync", flavor });
};

export const startMemoryReturn = (options: MemoryReturnOptions = {}): MemoryReturn => {
  const reducerOff = options.reducerOff ?? process.execArgv.includes("--no-memory-reducer");
  const collect = options.collect ?? (reducerOff ? exposedGc("last-resort") : undefined);
  if (collect === undefined)
    return {
      active: false,
      collections: () => 0,
      busyCollections: () => 0,
      hold: () => undefined,
      stop: () => undefined,
    };
  const collectBusy = options.collectBusy ?? (reducerOff ? exposedGc("regular") : undefined);
  const busyHeadroom = collectBusy === undefined ? 0 : (options.busyHeadroomBytes ?? 4 * MiB);
  const usedBytes = options.usedBytes ?? (() => getHeapStatistics().used_heap_size);
  let holding = false;
  let liveUsed = 0;
  let lastUsed = 0;
  let allowed = busyHeadroom;
  const quietMs = options.quietMs ?? 1_000;
  const minGrowth = options.minGrowthBytes ?? MiB;
  const heapBytes = options.heapBytes ?? (() => getHeapStatistics().total_heap_size);
  let baseline = heapBytes();
  let lastRequest = 0;
  let timer: NodeJS.Timeout | undefined;
  let collections = 0;
  let busyCollections = 0;

  const check = () => {
    const waited = performance.now() - lastRequest;
    if (waited < quietMs) {
      timer = setTimeout(check, quietMs - waited).unref();
      return;
    }
    timer = undefined;
    const before = heapBytes();
    if (before < baseline + minGrowth) {
      baseline = Math.min(baseline, before);
      return;
    }
    const started = process.cpuUsage();
    collect();
    const spent = process.cpuUsage(started);
    collections += 1;
    baseline = heapBytes();
    options.onCollected?.({
      beforeBytes: before,
      afterBytes: baseline,
      ms: (spent.user + spent.system) / 1000,
    });
  };

  const holdWhileBusy = () => {
    const used = usedBytes();
    // V8 collected on its own (the heap fell below the last result, or by more than a MiB since the
    // last request, more than a scavenge of the Deployment's 1 MiB semi-space frees): its result is
    // the new base.
    if (used < liveUsed || used < lastUsed - MiB) liveUsed = used;
    lastUsed = used;
    if (used <= liveUsed + allowed) return;
    collectBusy?.();
    busyCollections += 1;
    const after = usedBytes();
    // Mostly live (a cache filling, a takeover's LIST being kept): the next waits for twice the
    // growth, up to V8's own step, beyond which V8 collects first anyway.
    allowed = used - after < allowed / 2 ? Math.min(allowed * 2, v8GrowingStep) : busyHeadroom;
    liveUsed = after;
    lastUsed = after;
  };

  const onRequest = () => {
    lastRequest = performance.now();
    if (holding) holdWhileBusy();
    // The heap is looked at only while no timer is armed: once per quiet period, not per request.
    if (timer === undefined && heapBytes() >= baseline + minGrowth)
      timer = setTimeout(check, quietMs).unref();
  };
  diagnostics.subscribe(requestStarts, onRequest);

  return {
    active: true,
    collections: () => collections,
    busyCollections: () => busyCollections,
    hold: () => {
      if (busyHeadroom <= 0 || holding) return;
      holding = true;
      liveUsed = usedBytes();
      lastUsed = liveUsed;
    },
    stop: () => {
      diagnostics.unsubscribe(requestStarts, onRequest);
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
    },
  };
};
