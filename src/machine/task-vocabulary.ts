/**
 * The machine's vocabulary: its named effects (stubs that type the params; the drivers perform them),
 * its guards, its assign actions, and the small action groups the state table reuses. The state table
 * itself is task-machine.ts.
 */
import { setup } from "xstate";
import type { TaskState, TaskStatus } from "../api/status.ts";
import { isTerminal } from "../api/status.ts";
import type { RequeueReason } from "../effects/task-effect.ts";
import { blockingPeer } from "./admission.ts";
import { backoffDelayMs } from "./backoff.ts";
import { withFinalConditions } from "./conditions.ts";
import { describe, lifecycleErrors, unsupportedDescription } from "./descriptions.ts";
import { statusPatch, withError, withOperation, withState } from "./status-edits.ts";
import {
  type DeleteEvent,
  machineVersion,
  type PhaseEvent,
  phaseEvent,
  type ReconcileEvent,
  type TaskContext,
} from "./task-events.ts";
import { fromWireTime, toWireTime } from "./time.ts";
import type { PassInput, PeerTask, Phase, TaskError, Vocabulary } from "./types.ts";
import { operationOf } from "./types.ts";

// ---- derived facts the guards and actions share --------------------------------------------------

export const ttlDeadline = ({ input, status }: TaskContext): number =>
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

/** Whether `phase` has run longer than the optional per-phase deadline at `now`. */
const overDeadline = (context: TaskContext, phase: Phase, now: number): boolean => {
  const deadline = context.input.config.phaseDeadlineMs;
  const start = phaseStart(context, phase);
  return deadline !== undefined && start !== undefined && now - start > deadline;
};

/** When a queued task stops waiting for its turn (absent: it waits as long as it takes). */
export const queueDeadline = ({ input }: TaskContext): number | undefined =>
  input.config.queueDeadlineMs === undefined
    ? undefined
    : input.task.createdAt + input.config.queueDeadlineMs;

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

/** Rejected at Admit because of the peer that blocks it, with `errorOf`'s error naming that peer. */
const rejectedForPeer = (
  context: TaskContext,
  text: string,
  errorOf: (words: Vocabulary, namespace: string, group: string, peer: PeerTask) => TaskError,
): TaskStatus => {
  const { task, peers, config } = context.input;
  const peer = blockingPeer(task, peers);
  const status = operate(context, enter(context, "Rejected"), "admit", "Failed", text);
  if (peer === undefined || task.group === undefined) return status;
  return withError(
    status,
    "Admit",
    errorOf(config.vocabulary, task.namespace, task.group, peer),
    context.now,
  );
};

export const requeue = (delayMs: number, reason: RequeueReason, context: TaskContext) => ({
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
    // A result already known (not yet written) is replayed first: its side effect happened.
    cancelled: ({ context }) => context.cancel !== undefined && context.input.known === undefined,
    blockedByPeer: ({ context }) => blockingPeer(context.input.task, context.input.peers) !== undefined,
    // An expedited task waits for a working peer whatever the policy; it is never a duplicate.
    rejectsDuplicates: ({ context }) =>
      context.input.config.duplicatePolicy === "reject" && context.input.task.expedited !== true,
    blockedByExclusivePeer: ({ context }) =>
      context.input.task.expedited === true &&
      blockingPeer(context.input.task, context.input.peers)?.activity === "exclusive",
    queuedTooLong: ({ context }) => {
      const until = queueDeadline(context);
      return until !== undefined && context.now >= until;
    },
    pastDeadline: ({ context }, { phase }: { phase: Phase }) => overDeadline(context, phase, context.now),
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

export const effects = lifecycle.extend({
  actions: {
    /** Writes what changed since the last write, if anything: at most one write per handler-call boundary. */
    flushStatus: lifecycle.enqueueActions(({ context, enqueue }) => {
      const { config, task } = context.input;
      const desired = withFinalConditions(
        context.persisted,
        context.status,
        config.conditions,
        task.generation,
        context.now,
      );
      const patch = statusPatch(context.persisted, desired);
      if (patch === undefined) return;
      enqueue({ type: "patchStatus", params: { patch } });
      enqueue.assign({ persisted: desired, status: desired });
    }),
    claim: lifecycle.assign({ ownsFinalizer: true }),
    /** A handler result moves the pass's clock to when it arrived. */
    tick: lifecycle.assign({
      now: ({ context, event }) => (event.type === "reconcile" ? context.now : event.now),
      cancel: ({ context, event }) =>
        event.type.startsWith("phase.") && "cancel" in event ? event.cancel : context.cancel,
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
        const until = queueDeadline(context);
        const queued =
          peer === undefined
            ? describe.admitInProgress
            : describe.queued(context.input.config.vocabulary, peer);
        const text = until === undefined ? queued : describe.queuedUntil(queued, toWireTime(until));
        return operate(context, enter(context, "Pending"), "admit", "InProgress", text);
      }),
    ),
    failQueueTimeout: lifecycle.assign(
      edit((context) => {
        const peer = blockingPeer(context.input.task, context.input.peers)?.name ?? "";
        const words = context.input.config.vocabulary;
        const status = operate(
          context,
          enter(context, "Failed"),
          "admit",
          "Failed",
          describe.queueTimeout(words, peer),
        );
        const error = lifecycleErrors.queueTimeout(context.input.config.queueDeadlineMs ?? 0, peer);
        return withError(status, "Admit", error, context.now);
      }),
    ),
    rejectDuplicate: lifecycle.assign(
      edit((context) =>
        rejectedForPeer(
          context,
          describe.duplicate(context.input.config.vocabulary),
          lifecycleErrors.duplicate,
        ),
      ),
    ),
    rejectBesideExclusive: lifecycle.assign(
      edit((context) => {
        const peer = blockingPeer(context.input.task, context.input.peers);
        const text = describe.exclusivePeer(context.input.config.vocabulary, peer?.name ?? "");
        return rejectedForPeer(context, text, lifecycleErrors.exclusivePeer);
      }),
    ),
    rejectUnsupported: lifecycle.assign(
      edit((context) => {
        const { code, reason } = context.input.task.unsupported ?? {
          code: "ERR_UNSUPPORTED_TASK",
          reason: "unknown config",
        };
        const text = unsupportedDescription[code];
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
        const text = unsupportedDescription[code];
        const status = operate(context, enter(context, "Failed"), "execute", "Failed", text);
        return withError(status, "Execution", lifecycleErrors.unsupported(code, reason), context.now);
      }),
    ),
    /**
     * A recorded cancel ends the task before its next handler call: Failed with ERR_CANCELLED, naming
     * who asked and the last thing the task had done (Cleanup then undoes as for any failure).
     */
    failCancelled: lifecycle.assign(
      edit((context) => {
        const by = context.cancel?.by ?? "unknown";
        const last = context.status.lastOperation;
        const after = last === undefined || last.description === "" ? undefined : last.description;
        const phase: Phase = context.status.state === "InProgress" ? "execute" : "admit";
        const status = operate(context, enter(context, "Failed"), phase, "Failed", describe.cancelled(by));
        return withError(status, operationOf[phase], lifecycleErrors.cancelled(by, after), context.now);
      }),
    ),
    recordCompletion: lifecycle.assign(({ context, event }) => {
      if (event.type !== "phase.completed") return {};
      const text = described(context, event.phase, "Completed", event.description);
      const next = event.phase === "execute" ? enter(context, "Succeeded") : context.status;
      const status = operate(context, next, event.phase, "Completed", text);
      // Only Execute's result is the task's; Admit's and Cleanup's would describe no work done.
      const result = event.phase === "execute" ? event.result : undefined;
      return { status: result === undefined ? status : { ...status, result } };
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
    /** docs/contract.md §6: a DELETE that fails (not NotFound) is recorded on the cleanup and retried with backoff. */
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
export const deadlineEdit = (phase: Phase) =>
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

export const backoffOrPoll = effects.enqueueActions(({ context, event, enqueue }) => {
  const polled = event.type === "phase.retry" && event.error === undefined;
  const delayMs = polled
    ? event.type === "phase.retry" && event.afterMs !== undefined
      ? event.afterMs
      : context.input.config.requeueIntervalMs
    : backoffDelay(context);
  enqueue({ type: "requeueAfter", params: requeue(delayMs, polled ? "poll" : "backoff", context) });
});

export const expiredEvent = {
  type: "recordEvent",
  params: ({ context }: { context: TaskContext }) => ({
    eventType: "Normal" as const,
    reason: "Expired",
    note: `TTL of ${context.input.task.ttlSeconds}s elapsed; deleted`,
  }),
} as const;

export const waitForBackoff = {
  type: "requeueAfter",
  params: ({ context }: { context: TaskContext }) =>
    requeue((context.input.retryAt ?? context.now) - context.now, "waiting", context),
} as const;

/**
 * A retry that comes back after the phase's deadline ends the phase as the deadline does at the gate
 * (`deadline` is that target), with the retry's error recorded first: otherwise the pass would back
 * off, and any pass woken before the backoff ends (an echo, a resync) would fail the task instead.
 */
export const onPhaseResult = (phase: Phase, next: { completed: string; failed: string; deadline: string }) =>
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
    "phase.retry": [
      {
        guard: ({ context, event }: { context: TaskContext; event: PhaseEvent }) =>
          event.phase === phase && overDeadline(context, phase, event.now),
        target: next.deadline,
        actions: ["tick", "recordRetry", deadlineEdit(phase)],
      },
      {
        guard: ({ event }: { event: PhaseEvent }) => event.phase === phase,
        target: "retrying",
        actions: ["tick", "recordRetry"],
      },
    ],
  }) as const;

/** The context a pass starts with. */
