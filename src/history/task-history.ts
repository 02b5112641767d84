/**
 * Task history: per namespace, target and task type, the last outcome and the last success and
 * failure times, kept in one ConfigMap per namespace (history-store.ts) so that they outlive the tasks'
 * TTL and the controller, and shown as metrics (history-metrics.ts).
 *
 * A `ControllerObserver` that never holds a pass: an outcome (with its error code, which comes with the
 * write that ended the task) is queued, and a writer per namespace merges the queue into the ConfigMap
 * in the background (a PUT with the resourceVersion read; a conflict reads and merges again, up to
 * `conflictAttempts` times; a failure is logged, counted and retried with backoff). A lone outcome is
 * written at once; writes of one namespace start at least `writeIntervalMs` apart, so a burst of
 * outcomes is carried by one whole-ConfigMap write a second instead of one each few tasks. `takeover` reads
 * every history ConfigMap of the kind once this instance leads, so the metrics continue the last leader's.
 */
import type { KubeClient } from "../kube/kube-client.ts";
import type { ControllerObserver, TaskLabels } from "../runtime/metrics.ts";
import {
  applyOutcome,
  boundedOutcome,
  defaultHistoryLimits,
  entryKey,
  type HistoryEntry,
  type HistoryLimits,
  mergeEntries,
  mergeOutcomes,
  type OutcomeState,
  type TaskOutcome,
} from "./history-entry.ts";
import { type HistoryMetrics, noHistoryMetrics } from "./history-metrics.ts";
import {
  type HistoryLocation,
  listHistories,
  readHistory,
  type StoredHistory,
  writeHistory,
} from "./history-store.ts";

export type HistoryLogLevel = "info" | "warn" | "error";
export type HistoryLog = (level: HistoryLogLevel, message: string, fields: Record<string, unknown>) => void;

export interface TaskHistoryOptions {
  readonly client: KubeClient;
  /** The ConfigMap's name in each namespace (`historyConfigMapName(kind.resource)`). */
  readonly configMapName: string;
  /** The task kind's plural: the ConfigMaps' label value, so each kind reads only its own. */
  readonly plural: string;
  readonly limits?: HistoryLimits;
  readonly metrics?: HistoryMetrics;
  readonly log?: HistoryLog;
  /** The clock of outcome times (default `Date.now`). */
  readonly now?: () => number;
  /** First retry delay after a failed write or read (default 1 s), doubled up to `retryCapMs` (60 s). */
  readonly retryBaseMs?: number;
  readonly retryCapMs?: number;
  /** Least time between the starts of two writes of one namespace (default 1 s); a stop writes at once. */
  readonly writeIntervalMs?: number;
}

export interface TaskHistory {
  readonly observer: ControllerObserver;
  /**
   * Reads the kind's history ConfigMaps in `namespaces` (undefined: all) into the metrics. Resolves
   * after the first attempt; a failed one is logged, counted and retried in the background.
   */
  readonly takeover: (namespaces: ReadonlyArray<string | undefined>) => Promise<void>;
  /** Outcomes not yet written. */
  readonly pending: () => number;
  /** Resolves once no write is in flight (outcomes may still wait for a retry: `pending`). */
  readonly settled: () => Promise<void>;
  /**
   * Stops retrying and writes at once what waits for the write interval; the writes are given
   * `graceMs` (default 2 s) and then abandoned.
   */
  readonly stop: (graceMs?: number) => Promise<void>;
}

const terminalStates: ReadonlySet<string> = new Set<OutcomeState>(["Succeeded", "Failed", "Rejected"]);
const conflictAttempts = 5;

interface Known {
  readonly resourceVersion: string | undefined;
  readonly entries: ReadonlyArray<HistoryEntry>;
}

export const makeTaskHistory = (options: TaskHistoryOptions): TaskHistory => {
  const { client } = options;
  const limits = options.limits ?? defaultHistoryLimits;
  const metrics = options.metrics ?? noHistoryMetrics;
  const log: HistoryLog = options.log ?? (() => {});
  const now = options.now ?? Date.now;
  const retryBaseMs = options.retryBaseMs ?? 1000;
  const retryCapMs = options.retryCapMs ?? 60_000;
  const writeIntervalMs = options.writeIntervalMs ?? 1000;
  const where = (namespace: string): HistoryLocation => ({
    namespace,
    name: options.configMapName,
    plural: options.plural,
  });

  const queued = new Map<string, TaskOutcome[]>();
  /** What this instance knows of each namespace's history: the metrics' source. */
  const view = new Map<string, Map<string, HistoryEntry>>();
  /** The ConfigMap as last read or written, to PUT without reading first. */
  const known = new Map<string, Known>();
  const writing = new Map<string, Promise<void>>();
  const retries = new Map<string, { timer: NodeJS.Timeout; attempt: number }>();
  const failures = new Map<string, number>();
  /** When each namespace's last write started (performance.now()). */
  const lastWrite = new Map<string, number>();
  /** Writers waiting out `writeIntervalMs`: a stop wakes them for a last write. */
  const spacers = new Set<() => void>();
  const abort = new AbortController();
  let stopped = false;

  const viewOf = (namespace: string): Map<string, HistoryEntry> => {
    const entries = view.get(namespace) ?? new Map<string, HistoryEntry>();
    view.set(namespace, entries);
    return entries;
  };

  /** What a read keeps (history-store.ts): applied before anything read is learnt or exported. */
  const bounds = () => ({ limits, now: now() });

  /** Merges what another writer (or an earlier leader) stored into the view and the metrics. */
  const learn = (
    history: Pick<StoredHistory, "namespace" | "entries" | "problems" | "oversizedBytes">,
  ): void => {
    if (history.oversizedBytes !== undefined)
      log(
        "warn",
        "history ConfigMap is larger than this controller writes; skipped, the next write replaces it",
        {
          namespace: history.namespace,
          configMap: options.configMapName,
          bytes: history.oversizedBytes,
          maxBytes: limits.maxBytes,
        },
      );
    const entries = viewOf(history.namespace);
    for (const entry of history.entries) {
      const key = entryKey(entry.target, entry.type);
      const merged = mergeEntries(entries.get(key) ?? entry, entry);
      entries.set(key, merged);
      metrics.show(history.namespace, merged);
    }
    if (history.problems.length > 0)
      log("warn", "history ConfigMap holds entries it cannot read; they are dropped at the next write", {
        namespace: history.namespace,
        configMap: options.configMapName,
        problems: history.problems.slice(0, 5),
      });
  };

  const pendingCount = (): number => {
    let total = 0;
    for (const outcomes of queued.values()) total += outcomes.length;
    return total;
  };

  const retryLater = (namespace: string, run: () => void): void => {
    if (stopped || retries.has(namespace)) return;
    const attempt = (failures.get(namespace) ?? 0) + 1;
    failures.set(namespace, attempt);
    const delay = Math.min(retryCapMs, retryBaseMs * 2 ** (attempt - 1));
    const timer = setTimeout(() => {
      retries.delete(namespace);
      run();
    }, delay);
    timer.unref();
    retries.set(namespace, { timer, attempt });
  };

  /** One merge-and-write of `batch`; true once it is stored. */
  const writeBatch = async (namespace: string, batch: ReadonlyArray<TaskOutcome>): Promise<boolean> => {
    for (let attempt = 1; attempt <= conflictAttempts; attempt++) {
      let current = known.get(namespace);
      if (current === undefined) {
        const read = await readHistory(client, where(namespace), bounds(), abort.signal);
        if (read._tag === "Failed") {
          log("warn", "history ConfigMap read failed; the outcomes are kept and written later", {
            namespace,
            configMap: options.configMapName,
            cause: read.cause,
          });
          return false;
        }
        current =
          read._tag === "Found"
            ? { resourceVersion: read.history.resourceVersion, entries: read.history.entries }
            : { resourceVersion: undefined, entries: [] };
        if (read._tag === "Found") learn(read.history);
      }
      const merged = mergeOutcomes(current.entries, batch, limits);
      const answer = await writeHistory(
        client,
        where(namespace),
        current.resourceVersion,
        merged.encoded,
        abort.signal,
      );
      if (answer._tag === "Conflict") {
        known.delete(namespace);
        continue;
      }
      if (answer._tag === "Failed") {
        known.delete(namespace);
        log("warn", "history ConfigMap write failed; the outcomes are kept and written later", {
          namespace,
          configMap: options.configMapName,
          cause: answer.cause,
        });
        return false;
      }
      known.set(namespace, { resourceVersion: answer.resourceVersion, entries: merged.entries });
      if (merged.evicted.length > 0) {
        const entries = viewOf(namespace);
        for (const entry of merged.evicted) {
          entries.delete(entryKey(entry.target, entry.type));
          metrics.forget(namespace, entry);
        }
        metrics.evicted(merged.evicted.length);
        log(
          "warn",
          "history is full: the least useful entries were dropped (never-run ones first, then the oldest)",
          {
            namespace,
            configMap: options.configMapName,
            maxEntries: limits.maxEntries,
            maxBytes: limits.maxBytes,
            evicted: merged.evicted.slice(0, 10).map((entry) => `${entry.target}/${entry.type}`),
            evictedCount: merged.evicted.length,
          },
        );
      }
      return true;
    }
    log(
      "warn",
      "history ConfigMap kept changing under this writer; the outcomes are kept and written later",
      {
        namespace,
        configMap: options.configMapName,
        attempts: conflictAttempts,
      },
    );
    return false;
  };

  /** Resolves once `writeIntervalMs` has passed since the namespace's last write began, or at a stop. */
  const spaced = (namespace: string): Promise<void> => {
    const wait = (lastWrite.get(namespace) ?? Number.NEGATIVE_INFINITY) + writeIntervalMs - performance.now();
    if (stopped || wait <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        spacers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, wait);
      spacers.add(done);
    });
  };

  const flush = (namespace: string): Promise<void> => {
    const inFlight = writing.get(namespace);
    if (inFlight !== undefined) return inFlight;
    const run = (async () => {
      for (;;) {
        const batch = queued.get(namespace);
        if (batch === undefined || batch.length === 0) break;
        // Outcomes recorded meanwhile are pushed onto this same batch (`record`).
        await spaced(namespace);
        queued.delete(namespace);
        lastWrite.set(namespace, performance.now());
        if (await writeBatch(namespace, batch)) {
          // After a stop no outcome is queued any more: this writes what waited, and ends.
          failures.delete(namespace);
          continue;
        }
        // Kept, in order, ahead of whatever arrived meanwhile; retried later.
        queued.set(namespace, [...batch, ...(queued.get(namespace) ?? [])]);
        metrics.writeFailed();
        retryLater(namespace, () => void flush(namespace));
        break;
      }
    })().finally(() => {
      writing.delete(namespace);
      // An outcome queued while this run was finishing found it still in flight.
      if (!stopped && !retries.has(namespace) && (queued.get(namespace)?.length ?? 0) > 0)
        void flush(namespace);
    });
    writing.set(namespace, run);
    return run;
  };

  const record = (namespace: string, outcome: TaskOutcome): void => {
    const bounded = boundedOutcome(outcome);
    const entries = viewOf(namespace);
    const key = entryKey(bounded.target, bounded.type);
    const entry = applyOutcome(entries.get(key), bounded);
    entries.set(key, entry);
    metrics.show(namespace, entry);
    const batch = queued.get(namespace) ?? [];
    batch.push(bounded);
    queued.set(namespace, batch);
    if (!retries.has(namespace)) void flush(namespace);
  };

  const observer: ControllerObserver = {
    passEnded: () => {},
    // The error code comes with the write that ended the task, so an outcome is recorded at once: a
    // task deleted right after (TTL 0) cannot lose it.
    taskFinished: (labels: TaskLabels, seconds: number, _uid?: string, errorCode?: string) => {
      if (stopped || labels.etcd === "" || !terminalStates.has(labels.state)) return;
      record(labels.namespace, {
        target: labels.etcd,
        type: labels.type,
        state: labels.state as OutcomeState,
        at: now(),
        durationSeconds: seconds,
        ...(errorCode === undefined || errorCode === "" ? {} : { errorCode }),
      });
    },
  };

  const takeover = async (namespaces: ReadonlyArray<string | undefined>): Promise<void> => {
    await Promise.all(
      namespaces.map(async (namespace) => {
        const key = namespace ?? "";
        const load = async (): Promise<void> => {
          const listed = await listHistories(
            client,
            { name: options.configMapName, plural: options.plural },
            namespace,
            bounds(),
            abort.signal,
          );
          if (listed._tag === "Failed") {
            metrics.writeFailed();
            log("warn", "history ConfigMaps could not be read at takeover; retrying", {
              namespace: namespace ?? "(all)",
              cause: listed.cause,
            });
            retryLater(`list:${key}`, () => void load());
            return;
          }
          failures.delete(`list:${key}`);
          for (const history of listed.histories) {
            learn(history);
            // A later write PUTs on this version (and merges on a conflict).
            if (!known.has(history.namespace))
              known.set(history.namespace, {
                resourceVersion: history.resourceVersion,
                entries: history.entries,
              });
          }
          log("info", "history read", {
            namespace: namespace ?? "(all)",
            configMaps: listed.histories.length,
            entries: listed.histories.reduce((total, history) => total + history.entries.length, 0),
          });
        };
        await load();
      }),
    );
  };

  const settled = async (): Promise<void> => {
    for (;;) {
      const inFlight = [...writing.values()];
      if (inFlight.length === 0) return;
      await Promise.all(inFlight);
    }
  };

  const stop = async (graceMs = 2000): Promise<void> => {
    stopped = true;
    for (const { timer } of retries.values()) clearTimeout(timer);
    retries.clear();
    for (const wake of [...spacers]) wake();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      settled(),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, graceMs);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
    abort.abort(new Error("the controller is stopping"));
    if (pendingCount() > 0)
      log("warn", "stopping with history outcomes not written", { pending: pendingCount() });
  };

  return { observer, takeover, pending: pendingCount, settled, stop };
};
