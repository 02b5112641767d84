/**
 * What the task board shows, as plain JSON-ready data: one summary per task (the list and the machine's
 * counts), and per task its recent passes (transitions, handler calls, writes, Events, how the pass
 * ended). The same shapes are the board's JSON API (`/api/tasks`, `/api/tasks/{ns}/{name}`).
 */
import type { TaskState, TaskStatus } from "../api/status.ts";
import type { TransitionRecord } from "../reconcile/pass.ts";

/** A handler call and what it returned (`running` while it runs, `interrupted` when the task was deleted). */
export interface CallRecord {
  readonly phase: string;
  readonly outcome: "running" | "completed" | "failed" | "retry" | "interrupted";
  readonly description?: string;
  /** `CODE: message` of the error the handler attached. */
  readonly error?: string;
  readonly ms?: number;
}

/** A write to the task object and its result. */
export interface WriteRecord {
  readonly write: "AddFinalizer" | "PatchStatus" | "DeleteTask" | "RemoveFinalizer";
  /** For `PatchStatus`: the status fields written. */
  readonly fields?: ReadonlyArray<string>;
  /** `ok`, or the API's error text. */
  readonly result: string;
}

export interface EventRecord {
  readonly type: string;
  readonly reason: string;
  readonly note: string;
}

/** Something that happened to a task during a pass, reported by the recording services. */
export type Activity =
  | { readonly _tag: "call"; readonly call: CallRecord }
  | { readonly _tag: "write"; readonly write: WriteRecord }
  | { readonly _tag: "event"; readonly event: EventRecord };

export interface PassRecord {
  readonly runId: string;
  /** When the pass ended (ms since the epoch). */
  readonly at: number;
  readonly transitions: ReadonlyArray<TransitionRecord>;
  readonly calls: ReadonlyArray<CallRecord>;
  readonly writes: ReadonlyArray<WriteRecord>;
  readonly events: ReadonlyArray<EventRecord>;
  /** Where the machine rested: `execution.polling`, `retained`, `released`… */
  readonly state: string;
  /** How the pass ended: `requeue in 15s (poll)`, `await change (…)`, or where it stopped. */
  readonly end: string;
}

/** The task as the list shows it. */
export interface TaskSummary {
  readonly key: string;
  readonly namespace: string;
  readonly name: string;
  readonly uid: string;
  /** The config member (`onDemandSnapshot`…), `invalid` when the spec does not decode. */
  readonly kind: string;
  /** The admission group (an EtcdOpsTask's etcd). */
  readonly group: string;
  readonly state: TaskState | "";
  /** `Execution/InProgress`, `` before the first operation. */
  readonly phase: string;
  /** `CODE: message` of the newest `lastErrors` entry. */
  readonly lastError: string;
  /** ms since the epoch. */
  readonly createdAt: number;
  /** The machine state the task sits in now (a handler call in flight counts as its calling state). */
  readonly machineState: string;
  /** The controller released the task (its finalizer is gone; the object is or will be deleted). */
  readonly released: boolean;
  readonly passes: number;
  readonly updatedAt: number;
}

export interface TaskDetail extends TaskSummary {
  /** One line saying why the task is where it is (as `opstask describe` prints it). */
  readonly why: string;
  readonly status: TaskStatus;
  readonly finalizers: ReadonlyArray<string>;
  /** Newest last; older passes beyond the board's per-task limit are dropped (`droppedPasses`). */
  readonly history: ReadonlyArray<PassRecord>;
  readonly droppedPasses: number;
  /** What the pass in flight did so far (a handler call may run for minutes before its pass ends). */
  readonly inFlight: {
    readonly calls: ReadonlyArray<CallRecord>;
    readonly writes: ReadonlyArray<WriteRecord>;
    readonly events: ReadonlyArray<EventRecord>;
  };
}
