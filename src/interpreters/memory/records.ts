/**
 * What the simulated controller records as it works, for property tests and `simulate()`: handler
 * calls (and what became of their results), writes, Events and passes.
 */
import type { PassEnd, TaskEffect } from "../../effects/task-effect.ts";
import type { Phase, PhaseOutcome } from "../../machine/types.ts";
import type { TriggerReason } from "../../reconcile/core.ts";
import type { HandlerDefect } from "../../reconcile/handler-defect.ts";
import type { TransitionRecord } from "../../reconcile/pass.ts";

/** What a scripted handler does when called. */
export type Behaviour =
  | { readonly kind: "return"; readonly outcome: PhaseOutcome }
  | { readonly kind: "hang" }
  | { readonly kind: "throw"; readonly message: string }
  /** It threw, and the driver has read what (`simulate` reads an `Error`'s stack). */
  | { readonly kind: "defect"; readonly defect: HandlerDefect };

export interface HandlerCall {
  readonly id: number;
  readonly uid: string;
  readonly name: string;
  readonly phase: Phase;
  readonly at: number;
  /** Crashes before this call; calls in different epochs are separated by a crash. */
  readonly epoch: number;
  /** Whether our finalizer was on the stored object when the call started. */
  readonly finalizerPresent: boolean;
  /** The task's admission group (`namespace/group`), if any. */
  readonly group: string | undefined;
  outcome?: PhaseOutcome;
  /** When the call returned (or was cut by a crash); absent while it runs. */
  endedAt?: number;
  /** How many calls had started when this one ended (orders calls that overlap in time). */
  endedAfterCalls?: number;
  /** The result reached the object (a status write or the finalizer removal after it succeeded). */
  persisted: boolean;
  /** When it did. */
  persistedAt?: number;
  /** The pass that got the result ended normally without writing it. */
  unwritten?: boolean;
  /**
   * The call's result was dropped: its task was deleted while it ran (the call ran on; its result was
   * discarded), lost in a crash, or superseded (its status write failed, and by the next pass the task
   * had moved on, e.g. a peer now goes first).
   */
  dropped?: "cancelled" | "crash" | "superseded";
  /** How many watch events the server had sent when the call started (orders calls against changes). */
  readonly eventIndex: number;
}

export interface WriteRecord {
  readonly uid: string;
  readonly name: string;
  readonly effect: TaskEffect["_tag"];
  readonly at: number;
  /** The object's resourceVersion after the write (a DELETED event's, when it removed the object). */
  readonly resourceVersion: string;
}

export interface RecordedEvent {
  readonly uid: string;
  readonly name: string;
  readonly eventType: string;
  readonly reason: string;
  readonly note: string;
  readonly at: number;
}

export interface PassRecord {
  readonly uid: string;
  readonly name: string;
  readonly at: number;
  readonly transitions: ReadonlyArray<TransitionRecord>;
  readonly end?: PassEnd;
  readonly aborted?: string;
  /** The effects of the pass in order (for the no-op property). */
  readonly effects: ReadonlyArray<TaskEffect["_tag"]>;
  readonly trigger: TriggerReason;
  /** Nothing but changes of its own object woke it. */
  readonly onlyChanged: boolean;
  /** The resourceVersion it started over, and the one it left (a normal end only). */
  readonly version: string;
  readonly left?: string;
  /** How many watch events the server had sent, and decodes made, when it started. */
  readonly eventIndex: number;
  readonly decodeIndex: number;
  /** Crashes before this pass. */
  readonly epoch: number;
}

/** A decode of a task by the core, and the input it was stepping (a peer's read included). */
export interface DecodeRecord {
  readonly uid: string;
  readonly version: string;
  readonly input: "Changed" | "Turn" | "Answered" | "Returned" | "RelatedChanged" | "Resync" | "check";
  /** The input is a change or a turn of the task decoded (not a read of it as another task's peer). */
  readonly own: boolean;
  /** A change's type. */
  readonly type?: "ADDED" | "MODIFIED" | "DELETED";
  readonly at: number;
  readonly epoch: number;
}
