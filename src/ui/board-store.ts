/**
 * The task board's memory of each task, bounded. Fed by the task facts the controller decodes, the
 * recording services (handler calls, writes, Events) and every pass's end (`passTransitions`); activity
 * is kept per UID until its pass ends, then filed under that pass (a task's passes never overlap).
 * Strings are cut to `maxText`, a pass keeps `maxSteps` transitions, a task `maxPasses` passes, all tasks
 * about `maxBytes` of JSON; beyond that the least recently updated tasks are forgotten first.
 */
import type { TaskStatus } from "../api/status.ts";
import { isPassEnd, type PassEnd } from "../effects/task-effect.ts";
import { machineEdges } from "../machine/edges.ts";
import type { Phase } from "../machine/types.ts";
import { type Pass, statePath } from "../reconcile/pass.ts";
import type { TaskFacts } from "../reconcile/task-kind.ts";
import type {
  Activity,
  CallRecord,
  EventRecord,
  PassRecord,
  TaskDetail,
  TaskSummary,
  WriteRecord,
} from "./board-records.ts";

export interface BoardLimits {
  readonly maxBytes: number;
  readonly maxPasses: number;
  readonly maxSteps: number;
  readonly maxText: number;
}

export const defaultBoardLimits: BoardLimits = {
  maxBytes: 16 * 1024 * 1024,
  maxPasses: 50,
  maxSteps: 64,
  maxText: 512,
};

/** What the board knows of a task beside its summary, for the "why" line. */
export interface ExplainInput {
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  readonly createdAt: number;
  readonly deletingSince: number | undefined;
  readonly finalizers: ReadonlyArray<string>;
  readonly group: string;
  readonly ttlSeconds: number;
  readonly invalid: ReadonlyArray<string>;
  readonly status: TaskStatus;
}

interface TaskEntry {
  summary: TaskSummary;
  explain: ExplainInput;
  history: PassRecord[];
  droppedPasses: number;
  bytes: number;
}

/**
 * Activity not yet filed under a pass: per UID, for at most this many UIDs and items per UID, and at
 * most a quarter of `maxBytes` in all (passes whose activity is dropped are still recorded, without it).
 */
const maxPendingTasks = 1_000;
const maxPendingItems = 64;

interface PendingActivity {
  readonly items: Activity[];
  bytes: number;
}

const size = (value: unknown): number => JSON.stringify(value).length;

/** The state a task rests in while a handler phase runs: where that phase's results are received. */
const callingStates: Readonly<Record<Phase, string | undefined>> = (() => {
  const compoundPhase: Readonly<Record<string, Phase>> = {
    admission: "admit",
    execution: "execute",
    deletion: "cleanup",
  };
  const states: Partial<Record<Phase, string>> = {};
  for (const edge of machineEdges()) {
    const phase = compoundPhase[edge.from.split(".")[0] ?? ""];
    if (edge.event === "phase.completed" && phase !== undefined) states[phase] ??= edge.from;
  }
  return { admit: states.admit, execute: states.execute, cleanup: states.cleanup };
})();

const delayText = (ms: number): string =>
  ms < 1_000 ? `${ms} ms` : ms < 120_000 ? `${Math.round(ms / 1_000)} s` : `${Math.round(ms / 60_000)} min`;

const endText = (end: PassEnd): string =>
  end._tag === "RequeueAfter"
    ? `requeue in ${delayText(end.delayMs)} (${end.reason})`
    : `await change (${end.reason})`;

const errorText = (status: TaskStatus): string => {
  const last = status.lastErrors?.at(-1);
  if (last === undefined) return "";
  const message = /\] message: ([\s\S]*?), cause: /.exec(last.description)?.[1] ?? last.description;
  return `${last.code}: ${message}`;
};

export class BoardStore {
  private readonly limits: BoardLimits;
  /** By UID; least recently updated first (re-inserted on every update). */
  private readonly tasks = new Map<string, TaskEntry>();
  private readonly uidByKey = new Map<string, string>();
  private readonly pending = new Map<string, PendingActivity>();
  private pendingBytes = 0;
  private readonly listeners = new Set<(uid: string) => void>();
  private total = 0;

  constructor(limits: Partial<BoardLimits> = {}) {
    this.limits = { ...defaultBoardLimits, ...limits };
  }

  /** What the board holds, in JSON characters: tasks with their passes, and activity in flight. */
  get bytes(): number {
    return this.total + this.pendingBytes;
  }

  get size(): number {
    return this.tasks.size;
  }

  /** Called with a task's UID after each change; returns the unsubscribe. */
  onChange(listener: (uid: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The task as the controller decoded it (a cache change, a pass start, a write's result). */
  observeFacts(facts: TaskFacts, now: number): void {
    const { metadata } = facts;
    const entry = this.tasks.get(metadata.uid);
    if (entry?.summary.released === true) return;
    const text = (value: string) => this.cut(value);
    const createdAt = Date.parse(metadata.creationTimestamp);
    const deleting =
      metadata.deletionTimestamp === undefined ? Number.NaN : Date.parse(metadata.deletionTimestamp);
    const status = this.cutStatus(facts.status);
    const summary: TaskSummary = {
      key: `${metadata.namespace}/${metadata.name}`,
      namespace: metadata.namespace,
      name: metadata.name,
      uid: metadata.uid,
      kind: facts.member === "" ? "invalid" : text(facts.member),
      group: text(facts.group ?? ""),
      state: status.state ?? "",
      phase:
        status.lastOperation === undefined
          ? ""
          : `${status.lastOperation.type}/${status.lastOperation.state}`,
      lastError: errorText(status),
      createdAt: Number.isNaN(createdAt) ? now : createdAt,
      machineState: entry?.summary.machineState ?? "idle",
      released: false,
      passes: entry?.summary.passes ?? 0,
      updatedAt: now,
    };
    const explain: ExplainInput = {
      namespace: summary.namespace,
      name: summary.name,
      uid: summary.uid,
      createdAt: summary.createdAt,
      deletingSince: Number.isNaN(deleting) ? undefined : deleting,
      finalizers: (metadata.finalizers ?? []).map(text),
      group: summary.group,
      ttlSeconds: facts.ttlSeconds,
      invalid: (facts.invalid ?? []).slice(0, 5).map(text),
      status,
    };
    if (entry !== undefined && sameSummary(entry.summary, summary) && size(entry.explain) === size(explain))
      return;
    this.put(metadata.uid, { ...(entry ?? { history: [], droppedPasses: 0, bytes: 0 }), summary, explain });
  }

  /** A handler call, write or Event of a task's pass in flight. */
  record(uid: string, activity: Activity, now: number): void {
    let pending = this.pending.get(uid);
    if (pending === undefined) {
      pending = { items: [], bytes: 0 };
      this.pending.set(uid, pending);
    }
    const item = this.cutActivity(activity);
    pending.items.push(item);
    pending.bytes += size(item);
    this.pendingBytes += size(item);
    if (pending.items.length > maxPendingItems) {
      const dropped = size(pending.items.shift());
      pending.bytes -= dropped;
      this.pendingBytes -= dropped;
    }
    for (;;) {
      const oldest = this.pending.entries().next();
      if (oldest.done) break;
      if (this.pending.size <= maxPendingTasks && this.pendingBytes <= this.limits.maxBytes / 4) break;
      this.dropPending(oldest.value[0]);
    }
    const entry = this.tasks.get(uid);
    if (entry === undefined) return;
    const calling = activity._tag === "call" ? callingStates[activity.call.phase as Phase] : undefined;
    if (activity._tag === "call" && activity.call.outcome === "running" && calling !== undefined)
      this.put(uid, { ...entry, summary: { ...entry.summary, machineState: calling, updatedAt: now } });
    else this.notify(uid);
  }

  /** The end of a pass (or where it stopped, when a write failed): files its activity under it. */
  passEnded(
    task: { readonly key: string; readonly uid: string; readonly runId: string },
    pass: Pass,
    now: number,
  ): void {
    const items = this.pending.get(task.uid)?.items ?? [];
    this.dropPending(task.uid);
    const next = pass.pending[0];
    const state = statePath(pass.snapshot);
    const record: PassRecord = {
      runId: this.cut(task.runId),
      at: now,
      transitions: pass.transitions.slice(0, this.limits.maxSteps),
      ...fileActivity(items),
      state,
      end:
        next === undefined
          ? "stopped"
          : isPassEnd(next)
            ? endText(next)
            : `stopped before ${next._tag} (the write failed or the task is gone)`,
    };
    const entry = this.tasks.get(task.uid);
    if (entry === undefined) return;
    const history = [...entry.history, record];
    const dropped = Math.max(0, history.length - this.limits.maxPasses);
    this.put(task.uid, {
      ...entry,
      history: history.slice(dropped),
      droppedPasses: entry.droppedPasses + dropped,
      summary: {
        ...entry.summary,
        machineState: state,
        released: state === "released",
        passes: entry.summary.passes + 1,
        updatedAt: now,
      },
    });
  }

  summaries(): TaskSummary[] {
    return [...this.tasks.values()].map((entry) => entry.summary);
  }

  summary(uid: string): TaskSummary | undefined {
    return this.tasks.get(uid)?.summary;
  }

  latestPass(uid: string): PassRecord | undefined {
    return this.tasks.get(uid)?.history.at(-1);
  }

  detail(
    key: string,
    explain: (input: ExplainInput, now: number) => string,
    now: number,
  ): TaskDetail | undefined {
    const uid = this.uidByKey.get(key);
    const entry = uid === undefined ? undefined : this.tasks.get(uid);
    if (entry === undefined) return undefined;
    return {
      ...entry.summary,
      why: explain(entry.explain, now),
      status: entry.explain.status,
      finalizers: entry.explain.finalizers,
      history: entry.history,
      droppedPasses: entry.droppedPasses,
      inFlight: fileActivity(this.pending.get(entry.summary.uid)?.items ?? []),
    };
  }

  /** Tasks per machine state, released ones left out (they sit nowhere any more). */
  counts(): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const { summary } of this.tasks.values())
      if (!summary.released) counts[summary.machineState] = (counts[summary.machineState] ?? 0) + 1;
    return counts;
  }

  private put(uid: string, entry: TaskEntry): void {
    const previous = this.tasks.get(uid);
    const bytes = size(entry.summary) + size(entry.explain) + entry.history.reduce((n, p) => n + size(p), 0);
    this.total += bytes - (previous?.bytes ?? 0);
    this.tasks.delete(uid);
    this.tasks.set(uid, { ...entry, bytes });
    this.uidByKey.set(entry.summary.key, uid);
    this.evict();
    this.notify(uid);
  }

  private dropPending(uid: string): void {
    this.pendingBytes -= this.pending.get(uid)?.bytes ?? 0;
    this.pending.delete(uid);
  }

  private notify(uid: string): void {
    for (const listener of this.listeners) listener(uid);
  }

  private evict(): void {
    while (this.total > this.limits.maxBytes && this.tasks.size > 1) {
      const [uid, oldest] = this.tasks.entries().next().value ?? [];
      if (uid === undefined || oldest === undefined) return;
      this.tasks.delete(uid);
      this.total -= oldest.bytes;
      if (this.uidByKey.get(oldest.summary.key) === uid) this.uidByKey.delete(oldest.summary.key);
    }
  }

  private cut(text: string): string {
    return text.length > this.limits.maxText ? `${text.slice(0, this.limits.maxText)}…` : text;
  }

  private cutStatus(status: TaskStatus): TaskStatus {
    const operation = status.lastOperation;
    return {
      ...status,
      ...(operation === undefined
        ? {}
        : { lastOperation: { ...operation, description: this.cut(operation.description) } }),
      ...(status.lastErrors === undefined
        ? {}
        : {
            lastErrors: status.lastErrors
              .slice(-10)
              .map((error) => ({ ...error, description: this.cut(error.description) })),
          }),
    };
  }

  private cutActivity(activity: Activity): Activity {
    const text = (value: string | undefined) => (value === undefined ? undefined : this.cut(value));
    switch (activity._tag) {
      case "call": {
        const { description, error, ...rest } = activity.call;
        const call: CallRecord = {
          ...rest,
          ...(description === undefined ? {} : { description: this.cut(description) }),
          ...(error === undefined ? {} : { error: this.cut(error) }),
        };
        return { _tag: "call", call };
      }
      case "write": {
        const write: WriteRecord = {
          ...activity.write,
          result: text(activity.write.result) ?? "",
          ...(activity.write.fields === undefined ? {} : { fields: activity.write.fields.slice(0, 10) }),
        };
        return { _tag: "write", write };
      }
      case "event": {
        const event: EventRecord = {
          type: this.cut(activity.event.type),
          reason: this.cut(activity.event.reason),
          note: this.cut(activity.event.note),
        };
        return { _tag: "event", event };
      }
    }
  }
}

const fileActivity = (items: ReadonlyArray<Activity>) => ({
  calls: merge(items.flatMap((item) => (item._tag === "call" ? [item.call] : []))),
  writes: items.flatMap((item) => (item._tag === "write" ? [item.write] : [])),
  events: items.flatMap((item) => (item._tag === "event" ? [item.event] : [])),
});

/** A call reported running and then finished is one call. */
const merge = (calls: ReadonlyArray<CallRecord>): CallRecord[] => {
  const merged: CallRecord[] = [];
  for (const call of calls) {
    const last = merged.at(-1);
    if (last?.outcome === "running" && last.phase === call.phase) merged[merged.length - 1] = call;
    else merged.push(call);
  }
  return merged;
};

const sameSummary = (a: TaskSummary, b: TaskSummary): boolean =>
  a.state === b.state &&
  a.phase === b.phase &&
  a.lastError === b.lastError &&
  a.kind === b.kind &&
  a.group === b.group &&
  a.machineState === b.machineState;
