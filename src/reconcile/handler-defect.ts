/**
 * A handler that throws or dies has a bug, not a verdict on the task. The runtime never crashes on it
 * and never wedges the task: the defect is logged (once per distinct defect per task, with its stack),
 * counted, and the phase is tried again with backoff; the `handlerDefectLimit`-th defect of one phase
 * ends it as a `failed` result with ERR_HANDLER_DEFECT (Admit → Rejected, Execute → Failed, Cleanup →
 * released with a warning), so a handler that throws on every call cannot retry for ever.
 *
 * The rule is the pass's (reconcile/pass.ts answers `Threw` with `defectOutcome`); every driver only
 * reports what was thrown. The count lives in the core beside the phase's attempts, so a restart
 * starts it again (as it starts the backoff again).
 */
import * as Cause from "effect/Cause";
import { capText } from "../api/text-cap.ts";
import type { PassInput, Phase, PhaseOutcome } from "../machine/types.ts";

/** The default of `handlerDefectLimit`: defects of one phase that end it. */
export const defaultHandlerDefectLimit = 5;

/** What a handler threw, reduced to what the lifecycle writes and the runtime logs. */
export interface HandlerDefect {
  readonly kind: "defect";
  /** The stack's first line and the frame it was thrown from: what lastErrors and the description carry. */
  readonly summary: string;
  /** The stack (capped), for the log line. */
  readonly stack: string;
  /**
   * What makes two defects the same one: the error's class and its first frames (not the message,
   * which often holds changing values). One log line per signature per task phase.
   */
  readonly signature: string;
}

/** A handler's answer as a driver sees it: a result, or a defect. */
export type HandlerReply = PhaseOutcome | HandlerDefect;

const maxStackChars = 8_000;
const signatureFrames = 3;

const firstLine = (text: string): string => text.split("\n", 1)[0] ?? "";

const shown = (value: unknown): string => {
  if (typeof value === "string") return value;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
};

/**
 * A defect from whatever was thrown: an `Error` gives its stack; anything else (a string, a scripted
 * throw's message) only its text.
 */
export const defectOf = (thrown: unknown): HandlerDefect => {
  if (!(thrown instanceof Error)) {
    const line = capText(firstLine(shown(thrown)), 300);
    return { kind: "defect", summary: line, stack: line, signature: line };
  }
  const line = capText(firstLine(`${thrown.name}: ${thrown.message}`), 300);
  const frames = (thrown.stack ?? "")
    .split("\n")
    .map((frame) => frame.trim())
    .filter((frame) => frame.startsWith("at "));
  const where = frames[0];
  return {
    kind: "defect",
    summary: where === undefined ? line : capText(`${line} (${where})`, 500),
    stack: capText(thrown.stack ?? line, maxStackChars),
    signature: frames.length === 0 ? line : [thrown.name, ...frames.slice(0, signatureFrames)].join("\n"),
  };
};

/** The defect an Effect handler died (or failed untyped, or was interrupted) with. */
export const defectOfCause = (cause: Cause.Cause<unknown>): HandlerDefect => defectOf(Cause.squash(cause));

/** Defects of `phase` before this pass's call (the core's count, handed in with the pass's input). */
export const defectsBefore = (input: PassInput, phase: Phase): number =>
  input.handlerDefects?.phase === phase ? input.handlerDefects.count : 0;

/**
 * What a defect means for the task: a transient error (backoff, then the phase runs again) until it is
 * the `handlerDefectLimit`-th of its phase, then a failure.
 */
export const defectOutcome = (input: PassInput, phase: Phase, defect: HandlerDefect): PhaseOutcome => {
  const count = defectsBefore(input, phase) + 1;
  const limit = input.config.handlerDefectLimit ?? defaultHandlerDefectLimit;
  if (count < limit)
    return {
      kind: "retry",
      description: "Handler failed unexpectedly",
      error: { code: "ERR_HANDLER_DEFECT", message: "handler failed unexpectedly", cause: defect.summary },
    };
  return {
    kind: "failed",
    description: `Handler failed unexpectedly ${count} times; giving up: ${defect.summary}`,
    error: {
      code: "ERR_HANDLER_DEFECT",
      message: `handler failed unexpectedly ${count} times (limit ${limit})`,
      cause: defect.summary,
    },
  };
};
