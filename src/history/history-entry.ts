/**
 * One history entry per (target, task type): the last outcome and the last success and failure
 * times, kept after the tasks themselves are deleted at their TTL. Pure: merging an outcome, the
 * bounds, and the ConfigMap's encoding (history-store.ts writes it).
 *
 * Merging is idempotent and order-free: an outcome older than (or as old as) what an entry holds
 * changes nothing, so a retried write, two controllers' writes or a replay after a conflict converge
 * on the same entry.
 */
import { terminalText } from "../api/terminal-text.ts";
import { compareCodeUnits } from "../code-unit-order.ts";
import { boundedLabelValue } from "../runtime/metric-series.ts";

export type OutcomeState = "Succeeded" | "Failed" | "Rejected";

/** One finished task, as history keeps it. */
export interface TaskOutcome {
  /** What the kind names as the task's target (EtcdOpsTask: the Etcd's name), bounded. */
  readonly target: string;
  /** The task type: the handler's config member (`onDemandSnapshot`), `invalid` or `unsupported`. */
  readonly type: string;
  readonly state: OutcomeState;
  /** When the controller saw the task reach its terminal state (ms since the epoch). */
  readonly at: number;
  /** From the task's creation to its terminal state. */
  readonly durationSeconds: number;
  /** The last error's code of a Failed or Rejected task. */
  readonly errorCode?: string;
}

export interface HistoryEntry {
  readonly target: string;
  readonly type: string;
  readonly last: Omit<TaskOutcome, "target" | "type">;
  /** The last Succeeded task's time (ms). */
  readonly lastSuccessAt?: number;
  /** The last Failed task's time (ms). A Rejected task is an outcome, not a failed run. */
  readonly lastFailureAt?: number;
}

export interface HistoryLimits {
  /** Target × type pairs kept per namespace; the least useful go first (`evictionOrder`). */
  readonly maxEntries: number;
  /** Bytes of the encoded entries per namespace (a ConfigMap holds at most 1 MiB). */
  readonly maxBytes: number;
}

export const defaultHistoryLimits: HistoryLimits = { maxEntries: 200, maxBytes: 128 * 1024 };

/** A ConfigMap holds at most 1 MiB; the entries leave room for its metadata. */
const maxConfigMapBytes = 1000 * 1024;

/** `given` over the defaults; a bad value is a RangeError naming the option and what it accepts. */
export const historyLimitsOf = (given: Partial<HistoryLimits> = {}): HistoryLimits => {
  const limits = { ...defaultHistoryLimits, ...given };
  if (!Number.isInteger(limits.maxEntries) || limits.maxEntries < 1)
    throw new RangeError(`history.maxEntries must be a whole number ≥ 1 (got ${limits.maxEntries})`);
  if (!Number.isInteger(limits.maxBytes) || limits.maxBytes < 1024 || limits.maxBytes > maxConfigMapBytes)
    throw new RangeError(
      `history.maxBytes must be a whole number of bytes from 1024 to ${maxConfigMapBytes} (a ConfigMap holds at most 1 MiB; got ${limits.maxBytes})`,
    );
  return limits;
};

export const entryKey = (target: string, type: string): string => JSON.stringify([target, type]);

/**
 * An author-supplied text as history keeps it: control characters escaped (it reaches `/metrics` and
 * `opstask history`'s terminal), then bounded as metric labels are (63 characters).
 */
const boundedText = (text: string): string => boundedLabelValue(terminalText(text));

/** An outcome with its author-supplied texts escaped and bounded (`boundedText`). */
export const boundedOutcome = (outcome: TaskOutcome): TaskOutcome => ({
  ...outcome,
  target: boundedText(outcome.target),
  type: boundedText(outcome.type),
  ...(outcome.errorCode === undefined ? {} : { errorCode: boundedText(outcome.errorCode) }),
});

/** `entry` with `outcome` applied; the same entry when the outcome is not newer than its last one. */
export const applyOutcome = (entry: HistoryEntry | undefined, outcome: TaskOutcome): HistoryEntry => {
  if (entry !== undefined && entry.last.at >= outcome.at) {
    // Older news can still carry a success or failure time the entry lacks (two writers, reordered).
    const lastSuccessAt =
      outcome.state === "Succeeded" ? Math.max(entry.lastSuccessAt ?? 0, outcome.at) : entry.lastSuccessAt;
    const lastFailureAt =
      outcome.state === "Failed" ? Math.max(entry.lastFailureAt ?? 0, outcome.at) : entry.lastFailureAt;
    return {
      ...entry,
      ...(lastSuccessAt === undefined ? {} : { lastSuccessAt }),
      ...(lastFailureAt === undefined ? {} : { lastFailureAt }),
    };
  }
  const { target, type, ...last } = outcome;
  const lastSuccessAt = outcome.state === "Succeeded" ? outcome.at : entry?.lastSuccessAt;
  const lastFailureAt = outcome.state === "Failed" ? outcome.at : entry?.lastFailureAt;
  return {
    target,
    type,
    last,
    ...(lastSuccessAt === undefined ? {} : { lastSuccessAt }),
    ...(lastFailureAt === undefined ? {} : { lastFailureAt }),
  };
};

/** Two entries of one key: the newer last outcome, the later success and failure times. */
export const mergeEntries = (a: HistoryEntry, b: HistoryEntry): HistoryEntry => {
  const newer = a.last.at >= b.last.at ? a : b;
  const later = (x?: number, y?: number) => (x === undefined ? y : y === undefined ? x : Math.max(x, y));
  const lastSuccessAt = later(a.lastSuccessAt, b.lastSuccessAt);
  const lastFailureAt = later(a.lastFailureAt, b.lastFailureAt);
  return {
    target: newer.target,
    type: newer.type,
    last: newer.last,
    ...(lastSuccessAt === undefined ? {} : { lastSuccessAt }),
    ...(lastFailureAt === undefined ? {} : { lastFailureAt }),
  };
};

/**
 * Which entries go first when a bound is reached: those that never ran (only Rejected outcomes, the
 * ones a task author can make up by naming targets that do not exist), then the least recently
 * updated. So a flood of invented targets evicts itself before any real target's history.
 */
interface Ranked {
  readonly entry: HistoryEntry;
  /** `entryKey`, computed once: the storage order and the tie-break. */
  readonly key: string;
  readonly everRan: 0 | 1;
}

// Entries are immutable and a write keeps the unchanged ones as they were, so what is derived from an
// entry is kept beside it for as long as the entry lives: a write ranks and encodes only what changed.
const rankedOf = new WeakMap<HistoryEntry, Ranked>();

const ranked = (entry: HistoryEntry): Ranked => {
  const known = rankedOf.get(entry);
  if (known !== undefined) return known;
  const made: Ranked = {
    entry,
    key: entryKey(entry.target, entry.type),
    everRan: entry.lastSuccessAt === undefined && entry.lastFailureAt === undefined ? 0 : 1,
  };
  rankedOf.set(entry, made);
  return made;
};

const byEviction = (a: Ranked, b: Ranked): number =>
  a.everRan - b.everRan || a.entry.last.at - b.entry.last.at || compareCodeUnits(a.key, b.key);

const byKey = (a: Ranked, b: Ranked): number => compareCodeUnits(a.key, b.key);

export interface BoundedEntries {
  readonly entries: ReadonlyArray<HistoryEntry>;
  readonly evicted: ReadonlyArray<HistoryEntry>;
  /** `encodeEntries(entries)`, made while bounding (the writer stores it as it is). */
  readonly encoded: string;
}

/**
 * `entries` within `limits`, newest kept; `evicted` says what went, for the log and the counter.
 * Each entry is ranked and encoded once, and its bytes subtracted as it goes: a writer bounds the
 * whole history at every write, several times a second in a burst.
 */
export const withinLimits = (entries: ReadonlyArray<HistoryEntry>, limits: HistoryLimits): BoundedEntries => {
  const ordered = entries.map(ranked).sort(byEviction);
  const excess = Math.max(0, ordered.length - limits.maxEntries);
  const evicted = ordered.slice(0, excess).map((item) => item.entry);
  const kept = ordered.slice(excess).map((item) => ({ ...item, ...encoded(item.entry) }));
  let bytes = arrayBytes(kept.map((item) => item.bytes));
  let first = 0;
  while (first < kept.length && bytes > limits.maxBytes) {
    const item = kept[first++];
    if (item === undefined) break;
    evicted.push(item.entry);
    bytes -= item.bytes + (kept.length - first > 0 ? separator.length : 0);
  }
  const stored = kept.slice(first).sort(byKey);
  return {
    entries: stored.map((item) => item.entry),
    evicted,
    encoded: arrayText(stored.map((item) => item.text)),
  };
};

/** The ConfigMap data key holding the entries (JSON). */
export const entriesDataKey = "entries.json";

/** The stored form: times as RFC 3339 strings, so `kubectl get cm -o yaml` reads as history does. */
interface StoredEntry {
  readonly target: string;
  readonly type: string;
  readonly lastOutcome: {
    readonly state: OutcomeState;
    readonly time: string;
    readonly durationSeconds: number;
    readonly errorCode?: string;
  };
  readonly lastSuccessTime?: string;
  readonly lastFailureTime?: string;
}

const iso = (ms: number): string => new Date(ms).toISOString();

const stored = (entry: HistoryEntry): StoredEntry => ({
  target: entry.target,
  type: entry.type,
  lastOutcome: {
    state: entry.last.state,
    time: iso(entry.last.at),
    durationSeconds: Math.round(entry.last.durationSeconds * 1000) / 1000,
    ...(entry.last.errorCode === undefined ? {} : { errorCode: entry.last.errorCode }),
  },
  ...(entry.lastSuccessAt === undefined ? {} : { lastSuccessTime: iso(entry.lastSuccessAt) }),
  ...(entry.lastFailureAt === undefined ? {} : { lastFailureTime: iso(entry.lastFailureAt) }),
});

// The encoding is `JSON.stringify(entries, null, 1)` plus a final newline, assembled from each
// entry's own text so that an entry's bytes are known without encoding the whole array again.
// JSON.stringify escapes newlines inside strings, so every newline of an entry's text is layout,
// and an array element is that text one space further in.
const separator = ",\n";

interface EncodedEntry {
  /** The entry as it stands in the array: indented one space. */
  readonly text: string;
  readonly bytes: number;
}

const encodedOf = new WeakMap<HistoryEntry, EncodedEntry>();

const encoded = (entry: HistoryEntry): EncodedEntry => {
  const known = encodedOf.get(entry);
  if (known !== undefined) return known;
  const text = ` ${JSON.stringify(stored(entry), null, 1).replaceAll("\n", "\n ")}`;
  const made = { text, bytes: Buffer.byteLength(text) };
  encodedOf.set(entry, made);
  return made;
};

const arrayText = (texts: ReadonlyArray<string>): string =>
  texts.length === 0 ? "[]\n" : `[\n${texts.join(separator)}\n]\n`;

/** `Buffer.byteLength(arrayText(texts))` from the texts' own byte lengths. */
const arrayBytes = (bytes: ReadonlyArray<number>): number =>
  bytes.length === 0
    ? 3
    : 5 + bytes.reduce((total, one) => total + one, 0) + separator.length * (bytes.length - 1);

export const encodeEntries = (entries: ReadonlyArray<HistoryEntry>): string =>
  arrayText(
    entries
      .map(ranked)
      .sort(byKey)
      .map((item) => encoded(item.entry).text),
  );

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const timeOf = (value: unknown): number | undefined => {
  if (typeof value !== "string") return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
};

const states: ReadonlySet<string> = new Set<OutcomeState>(["Succeeded", "Failed", "Rejected"]);

/**
 * How far ahead of the reader's clock a stored time may be (another replica's clock): later ones are
 * refused, as no task of this controller can have finished then.
 */
export const futureToleranceMs = 60_000;

const decodeEntry = (value: unknown, now: number): HistoryEntry | string => {
  if (!isRecord(value)) return "an entry is not an object";
  const { target, type, lastOutcome } = value;
  if (typeof target !== "string" || typeof type !== "string") return "an entry lacks target or type";
  if (!isRecord(lastOutcome)) return `entry ${target}/${type}: lastOutcome is not an object`;
  const at = timeOf(lastOutcome.time);
  const state = lastOutcome.state;
  const durationSeconds = lastOutcome.durationSeconds;
  if (at === undefined) return `entry ${target}/${type}: lastOutcome.time is not an RFC 3339 time`;
  if (typeof state !== "string" || !states.has(state))
    return `entry ${target}/${type}: lastOutcome.state is not Succeeded, Failed or Rejected`;
  if (typeof durationSeconds !== "number" || !Number.isFinite(durationSeconds))
    return `entry ${target}/${type}: lastOutcome.durationSeconds is not a number`;
  const errorCode = typeof lastOutcome.errorCode === "string" ? lastOutcome.errorCode : undefined;
  const lastSuccessAt = timeOf(value.lastSuccessTime);
  const lastFailureAt = timeOf(value.lastFailureTime);
  const latest = Math.max(at, lastSuccessAt ?? at, lastFailureAt ?? at);
  if (latest > now + futureToleranceMs)
    return `entry ${boundedText(target)}/${boundedText(type)}: a time in the future (${iso(latest)}), which no task of this controller can have finished at`;
  const notLater = (ms: number) => Math.min(ms, now);
  return boundedEntry({
    target,
    type,
    last: {
      state: state as OutcomeState,
      at: notLater(at),
      durationSeconds,
      ...(errorCode === undefined ? {} : { errorCode }),
    },
    ...(lastSuccessAt === undefined ? {} : { lastSuccessAt: notLater(lastSuccessAt) }),
    ...(lastFailureAt === undefined ? {} : { lastFailureAt: notLater(lastFailureAt) }),
  });
};

/** Someone else may have edited the ConfigMap: what it says is bounded as our own writes are. */
const boundedEntry = (entry: HistoryEntry): HistoryEntry => {
  const { target, type, errorCode } = boundedOutcome({
    target: entry.target,
    type: entry.type,
    ...entry.last,
  });
  return {
    ...entry,
    target,
    type,
    last: {
      state: entry.last.state,
      at: entry.last.at,
      durationSeconds: entry.last.durationSeconds,
      ...(errorCode === undefined ? {} : { errorCode }),
    },
  };
};

export interface DecodedEntries {
  readonly entries: ReadonlyArray<HistoryEntry>;
  /** Why entries were skipped (an edited or damaged ConfigMap): logged, never fatal. */
  readonly problems: ReadonlyArray<string>;
}

/**
 * The entries of a ConfigMap's data; unreadable entries, and those with a time later than `now` (and
 * `futureToleranceMs`), are skipped and named in `problems`. A time within the tolerance is read as
 * `now`, so a read entry never outranks an outcome this controller records later.
 */
export const decodeEntries = (text: string | undefined, now: number = Date.now()): DecodedEntries => {
  if (text === undefined || text.trim() === "") return { entries: [], problems: [] };
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return { entries: [], problems: [`${entriesDataKey} is not JSON: ${String(error)}`] };
  }
  if (!Array.isArray(parsed)) return { entries: [], problems: [`${entriesDataKey} is not a JSON array`] };
  const byKey = new Map<string, HistoryEntry>();
  const problems: string[] = [];
  for (const item of parsed) {
    const entry = decodeEntry(item, now);
    if (typeof entry === "string") {
      problems.push(entry);
      continue;
    }
    const key = entryKey(entry.target, entry.type);
    const other = byKey.get(key);
    byKey.set(key, other === undefined ? entry : mergeEntries(other, entry));
  }
  return { entries: [...byKey.values()], problems };
};

/** `stored` with `outcomes` applied, within `limits`. */
export const mergeOutcomes = (
  stored: ReadonlyArray<HistoryEntry>,
  outcomes: ReadonlyArray<TaskOutcome>,
  limits: HistoryLimits,
): BoundedEntries => {
  const byKey = new Map(stored.map((entry) => [entryKey(entry.target, entry.type), entry]));
  for (const given of outcomes) {
    const outcome = boundedOutcome(given);
    const key = entryKey(outcome.target, outcome.type);
    byKey.set(key, applyOutcome(byKey.get(key), outcome));
  }
  return withinLimits([...byKey.values()], limits);
};
