/**
 * Keeps V8's heap near what the controller holds: while it works, a collection whenever the heap is
 * `busyHeadroomBytes` above what the last one left; once it is quiet (`quietMs` after the last request
 * to the apiserver, and only when the heap grew by `minGrowthBytes`), one full collection that gives
 * the busy period's memory back. Neither ever wakes an idle controller. Runs only with `gc`
 * (`--expose-gc`) and V8's memory reducer off (`--no-memory-reducer`), as deployed
 * (src/cli/deploy/node-settings.ts); otherwise it does nothing and V8 does the job alone. Why V8's own
 * rules do not suffice: docs/performance.md#keeping-the-heap-near-what-is-live.
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
