/**
 * Keeps V8's heap near what the controller holds, without waking an idle controller: while it works,
 * V8 starts marking earlier than it would; once it is quiet, one full collection gives the busy
 * period's memory back.
 *
 * While busy. V8 lets the old generation grow at least 8 MiB past what the last collection left
 * (heap-controller.cc's minimum growing step, in every mode that memory-reducing collections reach)
 * and starts its incremental marking only close to that limit, so a 1,000-task burst on a ~16 MiB
 * heap peaked at ~27 MiB: ~14 MB of the burst's peak RSS (bench/PROFILE.md). No flag shortens the
 * step, but `--incremental-marking-hard-trigger` starts marking once the heap is that percent of the
 * way to the limit; marking is incremental and concurrent, so each collection costs the main thread
 * little. `hold()` sets it (`markingTriggerPercent`, default 25) once the controller's caches are
 * filled: a takeover's LIST is mostly kept, and marking earlier there only costs CPU (0.14–0.22 s on
 * 5,000 tasks). Collections of our own at a lower limit were tried: full and atomic, they cost the
 * main thread ~5× V8's own for the same peak.
 *
 * Once quiet. V8's own memory reducer does this job on a timer: it starts 8 s after a major
 * collection and then runs two more, ~100 ms of CPU on this controller's heap, wherever that lands —
 * after a burst, in the middle of the idle time that follows (bench/PROFILE.md). The Deployment turns
 * it off (`--no-memory-reducer`, src/cli/deploy/node-settings.ts) and this runs the one collection
 * instead, when the controller's own work says it is due: `quietMs` after the last request to the
 * apiserver (every pass, write, Event, LIST and takeover makes requests; an idle controller makes none
 * but the Lease's renewals), and only when V8's heap grew by `minGrowthBytes` since the last one, so a
 * Lease renewal or a single small task arms no timer at all.
 *
 * Hand-written because nothing in Node or V8 offers "collect when this process goes quiet": the
 * reducer's delay is a fixed time after a collection, not after the work. Runs only with `gc` (node's
 * `--expose-gc`) and V8's reducer off (`--no-memory-reducer` on node's command line: V8 reads it only
 * at start), as deployed; otherwise it does nothing, sets no flag, and V8 does the job alone (with
 * both, a collection here would only start the reducer's own two).
 */
import * as diagnostics from "node:diagnostics_channel";
import { getHeapStatistics, setFlagsFromString } from "node:v8";

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
   * Once held, V8 starts its incremental marking when the old generation is this percent of the way
   * from what the last collection left to its limit (default 25; 0 leaves V8's own start).
   */
  readonly markingTriggerPercent?: number;
  /** Sets a V8 flag (default: `v8.setFlagsFromString`). */
  readonly setV8Flag?: (flag: string) => void;
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
  readonly collections: () => number;
  /** Starts V8's marking earlier from now on (the caches are filled); once, and only when active. */
  hold(): void;
  stop(): void;
}

/** Node's channel of every outgoing HTTP(S) request: the kube client's, the handlers', all. */
const requestStarts = "http.client.request.start";

type ExposedGc = (options: {
  readonly type: "major";
  readonly execution: "sync";
  readonly flavor: "last-resort";
}) => void;

const exposedGc = (): (() => void) | undefined => {
  const gc: unknown = Reflect.get(globalThis, "gc");
  if (typeof gc !== "function") return undefined;
  const collect = gc as ExposedGc;
  // "last-resort": V8's most thorough collection, which compacts and releases pages, as the reducer's does.
  return () => collect({ type: "major", execution: "sync", flavor: "last-resort" });
};

export const startMemoryReturn = (options: MemoryReturnOptions = {}): MemoryReturn => {
  const reducerOff = options.reducerOff ?? process.execArgv.includes("--no-memory-reducer");
  const collect = options.collect ?? (reducerOff ? exposedGc() : undefined);
  if (collect === undefined)
    return { active: false, collections: () => 0, hold: () => undefined, stop: () => undefined };
  const quietMs = options.quietMs ?? 1_000;
  const minGrowth = options.minGrowthBytes ?? 1024 * 1024;
  const heapBytes = options.heapBytes ?? (() => getHeapStatistics().total_heap_size);
  let baseline = heapBytes();
  let lastRequest = 0;
  let timer: NodeJS.Timeout | undefined;
  let collections = 0;
  let held = false;

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

  const onRequest = () => {
    lastRequest = performance.now();
    // The heap is looked at only while no timer is armed: once per quiet period, not per request.
    if (timer === undefined && heapBytes() >= baseline + minGrowth)
      timer = setTimeout(check, quietMs).unref();
  };
  diagnostics.subscribe(requestStarts, onRequest);

  return {
    active: true,
    collections: () => collections,
    hold: () => {
      const percent = options.markingTriggerPercent ?? 25;
      if (held || percent <= 0) return;
      held = true;
      (options.setV8Flag ?? setFlagsFromString)(`--incremental-marking-hard-trigger=${percent}`);
    },
    stop: () => {
      diagnostics.unsubscribe(requestStarts, onRequest);
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
    },
  };
};
