/**
 * The task lifecycle as one XState machine, run only through the pure `initialTransition`/`transition`
 * API. One run of the machine is one reconcile pass: it starts in `route` with everything the pass
 * knows (`PassInput`), emits effects as named actions, receives handler results as `phase.*` events,
 * and ends in a resting state that emits `requeueAfter` or `awaitChange`. Nothing survives between
 * passes except what the effects persisted, so the machine's state is rebuilt from the object each time.
 *
 * Read it beside docs/contract.md §4 (one pass) and §5 (what is written after each step).
 */
import { setup } from "xstate";
import type { TaskState, TaskStatus } from "../api/status.ts";
import { isTerminal } from "../api/status.ts";
import type { RequeueReason } from "../effects/task-effect.ts";
import { blockingPeer } from "./admission.ts";
import { backoffDelayMs } from "./backoff.ts";
import { describe, lifecycleErrors } from "./descriptions.ts";
import { statusPatch, withError, withOperation, withState } from "./status-edits.ts";
import { fromWireTime } from "./time.ts";
import type { PassInput, Phase, PhaseOutcome, TaskError } from "./types.ts";
import { operationOf } from "./types.ts";

/** Bumped when the meaning of persisted fields changes; objects stamped by a newer machine are left alone. */
export const machineVersion = 1;

export interface TaskContext {
  readonly input: PassInput;
  /** The status as persisted (the object's, then each successful write's). */
  readonly persisted: TaskStatus;
  /** The status as this pass wants it; `flushStatus` writes the difference. */
  readonly status: TaskStatus;
  readonly ownsFinalizer: boolean;
  /** When deletion was requested (the object's deletionTimestamp, or our own DELETE in this pass). */
  readonly deletingSince: number | undefined;
  /** The pass used `input.known` instead of calling the handler (so that result is now being persisted). */
  readonly replayed: boolean;
  /** The time of the latest event: a handler result can arrive long after the pass started. */
  readonly now: number;
}

/** Starts a pass: the machine re-reads everything from its context (set from the pass's input). */
export type ReconcileEvent = { readonly type: "reconcile" };

/** The answer to the `deleteTask` effect (the TTL's DELETE): done, or failed with the API's error text. */
export type DeleteEvent =
  | { readonly type: "delete.done"; readonly now: number }
  | { readonly type: "delete.failed"; readonly now: number; readonly cause: string };

/** A handler result; `now` is when it arrived (the times written with it are this one). */
export type PhaseEvent =
  | {
      readonly type: "phase.completed";
      readonly phase: Phase;
      readonly now: number;
      readonly description: string;
    }
  | {
      readonly type: "phase.failed";
      readonly phase: Phase;
      readonly now: number;
      readonly description: string;
      readonly error: TaskError;
    }
  | {
      readonly type: "phase.retry";
      readonly phase: Phase;
      readonly now: number;
      readonly description: string;
      readonly error?: TaskError;
      readonly afterMs?: number;
    };

export const phaseEvent = (phase: Phase, outcome: PhaseOutcome, now: number): PhaseEvent => {
  switch (outcome.kind) {
    case "completed":
      return { type: "phase.completed", phase, now, description: outcome.description };
    case "failed":
      return { type: "phase.failed", phase, now, description: outcome.description, error: outcome.error };
    case "retry":
      return {
        type: "phase.retry",
        phase,
        now,
        description: outcome.description,
        ...(outcome.error === undefined ? {} : { error: outcome.error }),
        ...(outcome.afterMs === undefined ? {} : { afterMs: outcome.afterMs }),
      };
  }
};

// ---- derived facts the guards and actions share --------------------------------------------------

const ttlDeadline = ({ input, status }: TaskContext): number =>
  (fromWireTime(status.lastTransitionTime) ?? input.task.createdAt) + input.task.ttlSeconds * 1000;

/** When a phase started, for the optional per-phase deadline. */
const phaseStart = (context: TaskContext, phase: Phase): number | undefined => {
  switch (phase) {
    case "admit":
      return context.input.task.createdAt;
    case "execute":
      return fromWireTime(context.status.startedAt);
    case "cleanup":
      return context.deletingSince;
  }
};

const backoffDelay = ({ input }: TaskContext): number => backoffDelayMs(input.config, input.retries);

const described = (
  context: TaskContext,
  phase: Phase,
  state: "Completed" | "Failed" | "InProgress",
  text: string,
) => (text !== "" ? text : describe.fallback(operationOf[phase], state, context.input.task.name));

const lastErrorCode = (status: TaskStatus): TaskError | undefined => {
  const last = status.lastErrors?.at(-1);
  return last === undefined ? undefined : { code: last.code, message: "", cause: "" };
};

const edit =
  (change: (context: TaskContext) => TaskStatus) =>
  ({ context }: { context: TaskContext }): Partial<TaskContext> => ({ status: change(context) });

const enter = (context: TaskContext, state: TaskState) => withState(context.status, state, context.now);

const operate = (
  context: TaskContext,
  status: TaskStatus,
  phase: Phase,
  state: "Completed" | "Failed" | "InProgress",
  description: string,
) => withOperation(status, operationOf[phase], state, description, context.input.runId, context.now);

const requeue = (delayMs: number, reason: RequeueReason, context: TaskContext) => ({
  delayMs: Math.max(context.input.config.minRequeueMs, Math.ceil(delayMs)),
  reason,
});

// ---- the machine --------------------------------------------------------------------------------

const lifecycle = setup({
  types: {
    context: {} as TaskContext,
    events: {} as PhaseEvent | ReconcileEvent | DeleteEvent,
    input: {} as PassInput,
  },
  actions: {
    // Effects: stubs that only type the params. The interpreter performs them (src/effects).
    addFinalizer: (_, _params: { finalizer: string; machineVersion: number }) => {},
    patchStatus: (_, _params: { patch: NonNullable<ReturnType<typeof statusPatch>> }) => {},
    runPhase: (_, _params: { phase: Phase }) => {},
    deleteTask: () => {},
    removeFinalizer: (_, _params: { finalizer: string }) => {},
    recordEvent: (_, _params: { eventType: "Normal" | "Warning"; reason: string; note: string }) => {},
    requeueAfter: (_, _params: { delayMs: number; reason: RequeueReason }) => {},
    awaitChange: (_, _params: { reason: string }) => {},
  },
  guards: {
    writtenByNewerMachine: ({ context }) => (context.input.task.machineVersion ?? 0) > machineVersion,
    deleting: ({ context }) => context.deletingSince !== undefined,
    ownsFinalizer: ({ context }) => context.ownsFinalizer,
    terminal: ({ context }) => isTerminal(context.status.state),
    ttlExpired: ({ context }) => ttlDeadline(context) <= context.now,
    inProgress: ({ context }) => context.status.state === "InProgress",
    unsupported: ({ context }) => context.input.task.unsupported !== undefined,
    blockedByPeer: ({ context }) => blockingPeer(context.input.task, context.input.peers) !== undefined,
    rejectsDuplicates: ({ context }) => context.input.config.duplicatePolicy === "reject",
    pastDeadline: ({ context }, { phase }: { phase: Phase }) => {
      const deadline = context.input.config.phaseDeadlineMs;
      const start = phaseStart(context, phase);
      return deadline !== undefined && start !== undefined && context.now - start > deadline;
    },
    backoffRunning: ({ context }) =>
      context.input.retryAt !== undefined && context.now < context.input.retryAt,
    resultKnown: ({ context }, { phase }: { phase: Phase }) => context.input.known?.phase === phase,
    /** A cleanup result is on the object already (written because another finalizer kept it visible). */
    cleanupRecorded: ({ context }) =>
      context.status.lastOperation?.type === "Cleanup" && context.status.lastOperation.state !== "InProgress",
    cleanupNeeded: ({ context }) =>
      context.status.state !== "Rejected" && context.input.task.unsupported === undefined,
    othersHoldObject: ({ context }) =>
      context.input.task.finalizers.some((finalizer) => finalizer !== context.input.config.finalizer),
  },
});

const effects = lifecycle.extend({
  actions: {
    /** Writes what changed since the last write, if anything: at most one write per handler-call boundary. */
    flushStatus: lifecycle.enqueueActions(({ context, enqueue }) => {
      const patch = statusPatch(context.persisted, context.status);
      if (patch === undefined) return;
      enqueue({ type: "patchStatus", params: { patch } });
      enqueue.assign({ persisted: context.status });
    }),
    claim: lifecycle.assign({ ownsFinalizer: true }),
    /** A handler result moves the pass's clock to when it arrived. */
    tick: lifecycle.assign({
      now: ({ context, event }) => (event.type === "reconcile" ? context.now : event.now),
    }),
    requestDeletion: lifecycle.assign({ deletingSince: ({ context }) => context.now }),
    /** Replays a handler result that is known but was never persisted, instead of calling the handler again. */
    replayKnown: lifecycle.enqueueActions(({ context, enqueue }) => {
      const known = context.input.known;
      if (known === undefined) return;
      enqueue.assign({ replayed: true });
      enqueue.raise(phaseEvent(known.phase, known.outcome, context.now));
    }),
    markPending: lifecycle.assign(
      edit((context) => (context.status.state === undefined ? enter(context, "Pending") : context.status)),
    ),
    startExecution: lifecycle.assign(edit((context) => enter(context, "InProgress"))),
    /** The Started event follows the write that made the task InProgress, never precedes it. */
    reportStart: lifecycle.enqueueActions(({ context, enqueue }) => {
      if (context.input.task.status.state === "InProgress") return;
      enqueue({
        type: "recordEvent",
        params: { eventType: "Normal", reason: "Started", note: "Admitted; execution started" },
      });
    }),
    announceExecution: lifecycle.assign(
      edit((context) =>
        // A retry keeps the previous attempt's text until its own result arrives: one write per attempt.
        context.status.lastOperation?.type === "Execution"
          ? context.status
          : operate(context, context.status, "execute", "InProgress", describe.executionInProgress),
      ),
    ),
    queueBehindPeer: lifecycle.assign(
      edit((context) => {
        const peer = blockingPeer(context.input.task, context.input.peers);
        const text =
          peer === undefined
            ? describe.admitInProgress
            : describe.queued(context.input.config.vocabulary, peer);
        return operate(context, enter(context, "Pending"), "admit", "InProgress", text);
      }),
    ),
    rejectDuplicate: lifecycle.assign(
      edit((context) => {
        const { task, peers, config } = context.input;
        const peer = blockingPeer(task, peers);
        const status = operate(
          context,
          enter(context, "Rejected"),
          "admit",
          "Failed",
          describe.duplicate(config.vocabulary),
        );
        if (peer === undefined || task.group === undefined) return status;
        const error = lifecycleErrors.duplicate(config.vocabulary, task.namespace, task.group, peer);
        return withError(status, "Admit", error, context.now);
      }),
    ),
    rejectUnsupported: lifecycle.assign(
      edit((context) => {
        const { code, reason } = context.input.task.unsupported ?? {
          code: "ERR_UNSUPPORTED_TASK",
          reason: "unknown config",
        };
        const text = code === "ERR_INVALID_TASK" ? describe.invalid : describe.unsupported;
        const status = operate(context, enter(context, "Rejected"), "admit", "Failed", text);
        return withError(status, "Admit", lifecycleErrors.unsupported(code, reason), context.now);
      }),
    ),
    failUnsupported: lifecycle.assign(
      edit((context) => {
        const { code, reason } = context.input.task.unsupported ?? {
          code: "ERR_UNSUPPORTED_TASK",
          reason: "unknown config",
        };
        const text = code === "ERR_INVALID_TASK" ? describe.invalid : describe.unsupported;
        const status = operate(context, enter(context, "Failed"), "execute", "Failed", text);
        return withError(status, "Execution", lifecycleErrors.unsupported(code, reason), context.now);
      }),
    ),
    recordCompletion: lifecycle.assign(({ context, event }) => {
      if (event.type !== "phase.completed") return {};
      const text = described(context, event.phase, "Completed", event.description);
      const next = event.phase === "execute" ? enter(context, "Succeeded") : context.status;
      return { status: operate(context, next, event.phase, "Completed", text) };
    }),
    recordFailure: lifecycle.assign(({ context, event }) => {
      if (event.type !== "phase.failed") return {};
      const text = described(context, event.phase, "Failed", event.description);
      const terminal: Record<Phase, TaskState | undefined> = {
        admit: "Rejected",
        execute: "Failed",
        cleanup: undefined,
      };
      const state = terminal[event.phase];
      const next = state === undefined ? context.status : enter(context, state);
      const status = operate(context, next, event.phase, "Failed", text);
      return { status: withError(status, operationOf[event.phase], event.error, context.now) };
    }),
    recordRetry: lifecycle.assign(({ context, event }) => {
      if (event.type !== "phase.retry") return {};
      const text = described(context, event.phase, "InProgress", event.description);
      const base = event.phase === "admit" ? enter(context, "Pending") : context.status;
      const status = operate(context, base, event.phase, "InProgress", text);
      return {
        status:
          event.error === undefined
            ? status
            : withError(status, operationOf[event.phase], event.error, context.now),
      };
    }),
    /** §6: a DELETE that fails (not NotFound) is recorded on the cleanup and retried with backoff. */
    recordDeleteFailure: lifecycle.assign(({ context, event }) => {
      if (event.type !== "delete.failed") return {};
      const status = operate(context, context.status, "cleanup", "InProgress", describe.cleanupInProgress);
      return {
        status: withError(
          status,
          "Cleanup",
          lifecycleErrors.deleteFailed(context.input.config.vocabulary, event.cause),
          context.now,
        ),
      };
    }),
    skipCleanup: lifecycle.assign(
      edit((context) =>
        context.status.state === "Rejected"
          ? operate(context, context.status, "cleanup", "Completed", describe.cleanupSkippedRejected)
          : operate(context, context.status, "cleanup", "Completed", describe.cleanupCompleted),
      ),
    ),
  },
});

/** The per-phase deadline ran out: the phase fails (its task ends), with the reason in lastErrors. */
const deadlineEdit = (phase: Phase) =>
  effects.assign(
    edit((context) => {
      const type = operationOf[phase];
      const deadlineMs = context.input.config.phaseDeadlineMs ?? 0;
      const terminal: Record<Phase, TaskState | undefined> = {
        admit: "Rejected",
        execute: "Failed",
        cleanup: undefined,
      };
      const state = terminal[phase];
      const next = state === undefined ? context.status : enter(context, state);
      const status = operate(context, next, phase, "Failed", describe.deadline(type));
      const error = lifecycleErrors.deadline(type, deadlineMs, lastErrorCode(context.status));
      return withError(status, type, error, context.now);
    }),
  );

const backoffOrPoll = effects.enqueueActions(({ context, event, enqueue }) => {
  const polled = event.type === "phase.retry" && event.error === undefined;
  const delayMs = polled
    ? event.type === "phase.retry" && event.afterMs !== undefined
      ? event.afterMs
      : context.input.config.requeueIntervalMs
    : backoffDelay(context);
  enqueue({ type: "requeueAfter", params: requeue(delayMs, polled ? "poll" : "backoff", context) });
});

const expiredEvent = {
  type: "recordEvent",
  params: ({ context }: { context: TaskContext }) => ({
    eventType: "Normal" as const,
    reason: "Expired",
    note: `TTL of ${context.input.task.ttlSeconds}s elapsed; deleted`,
  }),
} as const;

const waitForBackoff = {
  type: "requeueAfter",
  params: ({ context }: { context: TaskContext }) =>
    requeue((context.input.retryAt ?? context.now) - context.now, "waiting", context),
} as const;

const onPhaseResult = (phase: Phase, next: { completed: string; failed: string }) =>
  ({
    "phase.completed": {
      guard: ({ event }: { event: PhaseEvent }) => event.phase === phase,
      target: next.completed,
      actions: ["tick", "recordCompletion"],
    },
    "phase.failed": {
      guard: ({ event }: { event: PhaseEvent }) => event.phase === phase,
      target: next.failed,
      actions: ["tick", "recordFailure"],
    },
    "phase.retry": {
      guard: ({ event }: { event: PhaseEvent }) => event.phase === phase,
      target: "retrying",
      actions: ["tick", "recordRetry"],
    },
  }) as const;

/** The context a pass starts with. */
export const contextOf = (input: PassInput): TaskContext => ({
  input,
  persisted: input.task.status,
  status: input.task.status,
  ownsFinalizer: input.task.finalizers.includes(input.config.finalizer),
  deletingSince: input.task.deletingSince,
  replayed: false,
  now: input.now,
});

export const taskMachine = effects.createMachine({
  id: "task",
  version: String(machineVersion),
  context: ({ input }) => contextOf(input),
  initial: "idle",
  states: {
    /** Between passes. A pass is one `reconcile` event, with the context rebuilt from the object. */
    idle: {
      on: { reconcile: "route" },
    },

    /** docs/contract.md §4: terminal or deleting tasks go to the deletion flow; the rest run the task flow. */
    route: {
      always: [
        { guard: "writtenByNewerMachine", target: "foreign" },
        { guard: { type: "deleting" }, target: "deletion" },
        { guard: "terminal", target: "terminal" },
        { guard: { type: "ownsFinalizer" }, target: "flow" },
        { target: "claiming" },
      ],
    },

    /** §2: the finalizer is persisted before any handler phase runs. */
    claiming: {
      entry: [
        "claim",
        {
          type: "addFinalizer",
          params: ({ context }) => ({ finalizer: context.input.config.finalizer, machineVersion }),
        },
      ],
      always: "flow",
    },

    flow: {
      always: [{ guard: "inProgress", target: "execution" }, { target: "admission" }],
    },

    /** §4 Admit and §8: Pending, admitted exactly once. */
    admission: {
      initial: "gate",
      states: {
        gate: {
          always: [
            { guard: "unsupported", target: "#task.rejected", actions: "rejectUnsupported" },
            { guard: { type: "blockedByPeer" }, target: "gateDuplicate" },
            {
              guard: { type: "pastDeadline", params: { phase: "admit" } },
              target: "#task.rejected",
              actions: deadlineEdit("admit"),
            },
            { guard: "backoffRunning", target: "backingOff" },
            {
              guard: { type: "resultKnown", params: { phase: "admit" } },
              target: "calling",
              actions: "replayKnown",
            },
            { target: "calling", actions: { type: "runPhase", params: { phase: "admit" } } },
          ],
        },
        gateDuplicate: {
          always: [
            { guard: "rejectsDuplicates", target: "#task.rejected", actions: "rejectDuplicate" },
            { target: "queued" },
          ],
        },
        calling: {
          on: onPhaseResult("admit", { completed: "#task.execution", failed: "#task.rejected" }),
        },
        queued: {
          entry: [
            "queueBehindPeer",
            "flushStatus",
            {
              type: "requeueAfter",
              params: ({ context }) => requeue(context.input.config.requeueIntervalMs, "queued", context),
            },
          ],
        },
        retrying: { entry: ["markPending", "flushStatus", backoffOrPoll] },
        backingOff: { entry: [waitForBackoff] },
      },
    },

    /** §4 Execution: InProgress; Execute runs until it completes, fails, or the deadline ends it. */
    execution: {
      entry: "startExecution",
      initial: "gate",
      states: {
        gate: {
          always: [
            { guard: "unsupported", target: "#task.failed", actions: "failUnsupported" },
            {
              guard: { type: "pastDeadline", params: { phase: "execute" } },
              target: "#task.failed",
              actions: deadlineEdit("execute"),
            },
            { guard: "backoffRunning", target: "backingOff" },
            {
              guard: { type: "resultKnown", params: { phase: "execute" } },
              target: "calling",
              actions: "replayKnown",
            },
            {
              target: "calling",
              actions: [
                "announceExecution",
                "flushStatus",
                "reportStart",
                { type: "runPhase", params: { phase: "execute" } },
              ],
            },
          ],
        },
        calling: {
          on: onPhaseResult("execute", { completed: "#task.succeeded", failed: "#task.failed" }),
        },
        retrying: { entry: ["flushStatus", backoffOrPoll] },
        backingOff: { entry: [waitForBackoff] },
      },
    },

    succeeded: {
      entry: [
        "flushStatus",
        {
          type: "recordEvent",
          params: ({ context }) => ({
            eventType: "Normal",
            reason: "Succeeded",
            note: context.status.lastOperation?.description ?? "",
          }),
        },
      ],
      always: "terminal",
    },
    failed: {
      entry: [
        "flushStatus",
        {
          type: "recordEvent",
          params: ({ context }) => ({
            eventType: "Warning",
            reason: "Failed",
            note: context.status.lastOperation?.description ?? "",
          }),
        },
      ],
      always: "terminal",
    },
    rejected: {
      entry: [
        "flushStatus",
        {
          type: "recordEvent",
          params: ({ context }) => ({
            eventType: "Warning",
            reason: "Rejected",
            note: context.status.lastOperation?.description ?? "",
          }),
        },
      ],
      always: "terminal",
    },

    /** §11: terminal tasks are kept for `ttlSecondsAfterFinished`, counted from lastTransitionTime. */
    terminal: {
      always: [{ guard: "ttlExpired", target: "expiring" }, { target: "retained" }],
    },
    retained: {
      entry: {
        type: "requeueAfter",
        params: ({ context }) => requeue(ttlDeadline(context) - context.now, "ttl", context),
      },
    },
    /** TTL expiry is a DELETE; the deletion flow below then runs as for a delete by the user. */
    expiring: {
      entry: "deleteTask",
      on: {
        "delete.done": [
          {
            guard: { type: "ownsFinalizer" },
            target: "deletion",
            actions: ["tick", "requestDeletion", expiredEvent],
          },
          { target: "released", actions: ["tick", expiredEvent] },
        ],
        "delete.failed": { target: "deleteRetrying", actions: ["tick", "recordDeleteFailure"] },
      },
    },
    deleteRetrying: {
      entry: ["flushStatus", backoffOrPoll],
    },

    /** §11: cleanup (skipped for Rejected), then our finalizer goes; foreign ones stay. */
    deletion: {
      initial: "gate",
      states: {
        gate: {
          always: [{ guard: { type: "ownsFinalizer" }, target: "cleanup" }, { target: "#task.released" }],
        },
        cleanup: {
          always: [
            { guard: "cleanupRecorded", target: "release" },
            { guard: { type: "cleanupNeeded" }, target: "cleanupGate" },
            { target: "release", actions: "skipCleanup" },
          ],
        },
        cleanupGate: {
          always: [
            {
              guard: { type: "pastDeadline", params: { phase: "cleanup" } },
              target: "release",
              actions: deadlineEdit("cleanup"),
            },
            { guard: "backoffRunning", target: "backingOff" },
            {
              guard: { type: "resultKnown", params: { phase: "cleanup" } },
              target: "calling",
              actions: "replayKnown",
            },
            { target: "calling", actions: { type: "runPhase", params: { phase: "cleanup" } } },
          ],
        },
        calling: {
          on: onPhaseResult("cleanup", { completed: "release", failed: "releaseAfterFailure" }),
        },
        retrying: { entry: ["flushStatus", backoffOrPoll] },
        backingOff: { entry: [waitForBackoff] },
        /** A cleanup that cannot succeed must not hold the object for ever: warn and let it go. */
        releaseAfterFailure: {
          entry: {
            type: "recordEvent",
            params: ({ context }) => ({
              eventType: "Warning",
              reason: "CleanupFailed",
              note: context.status.lastOperation?.description ?? "",
            }),
          },
          always: "release",
        },
        /** The cleanup record is written only if someone can still see it: another finalizer holds the object. */
        release: {
          always: [
            { guard: "othersHoldObject", target: "releasing", actions: "flushStatus" },
            { target: "releasing" },
          ],
        },
        releasing: {
          entry: {
            type: "removeFinalizer",
            params: ({ context }) => ({ finalizer: context.input.config.finalizer }),
          },
          always: "#task.released",
        },
      },
    },

    /** Being deleted and no longer ours: nothing to do. */
    released: {
      entry: { type: "awaitChange", params: { reason: "released" } },
    },
    /** Stamped by a newer opstask: never touch what we do not understand. */
    foreign: {
      entry: { type: "awaitChange", params: { reason: "written by a newer machine version" } },
    },
  },
});

export type TaskMachine = typeof taskMachine;
