/**
 * The task lifecycle as one XState machine, only ever stepped purely: no actor is started, each event's
 * microsteps are computed (src/machine/microsteps.ts). One run of the machine is one reconcile pass: it
 * starts in `route` with everything the pass knows (`PassInput`), emits effects as named actions,
 * receives handler results as `phase.*` events, and ends in a resting state that emits `requeueAfter`
 * or `awaitChange`. Nothing survives between passes except what the effects persisted, so the machine's
 * state is rebuilt from the object each time.
 *
 * This file is the state table only: read it beside docs/contract.md §4 (one pass) and §5 (what is
 * written after each step). The context and events are task-events.ts; the named effects, guards and
 * status edits it refers to are task-vocabulary.ts.
 */
import { contextOf, machineVersion } from "./task-events.ts";
import {
  backoffOrPoll,
  deadlineEdit,
  effects,
  expiredEvent,
  onPhaseResult,
  queueDeadline,
  requeue,
  ttlDeadline,
  waitForBackoff,
} from "./task-vocabulary.ts";

export {
  contextOf,
  type DeleteEvent,
  machineVersion,
  type PhaseEvent,
  phaseEvent,
  type ReconcileEvent,
  type TaskContext,
} from "./task-events.ts";

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
            { guard: "cancelled", target: "#task.failed", actions: "failCancelled" },
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
            { guard: "blockedByExclusivePeer", target: "#task.rejected", actions: "rejectBesideExclusive" },
            { guard: "rejectsDuplicates", target: "#task.rejected", actions: "rejectDuplicate" },
            { guard: "queuedTooLong", target: "#task.failed", actions: "failQueueTimeout" },
            { target: "queued" },
          ],
        },
        calling: {
          on: onPhaseResult("admit", {
            completed: "#task.execution",
            failed: "#task.rejected",
            deadline: "#task.rejected",
          }),
        },
        queued: {
          entry: [
            "queueBehindPeer",
            "flushStatus",
            {
              type: "requeueAfter",
              // The poll comes back by the queue deadline at the latest, so the task never waits past it.
              params: ({ context }) =>
                requeue(
                  Math.min(
                    context.input.config.requeueIntervalMs,
                    (queueDeadline(context) ?? Number.POSITIVE_INFINITY) - context.now,
                  ),
                  "queued",
                  context,
                ),
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
            // A cancel goes before everything that could call the handler again.
            { guard: "cancelled", target: "#task.failed", actions: "failCancelled" },
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
          on: onPhaseResult("execute", {
            completed: "#task.succeeded",
            failed: "#task.failed",
            deadline: "#task.failed",
          }),
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
      always: [
        // A failed TTL DELETE backs off like a handler's error: a pass before retryAt deletes nothing.
        { guard: "backoffRunning", target: "deleteBackingOff" },
        { guard: "ttlExpired", target: "expiring" },
        { target: "retained" },
      ],
    },
    deleteBackingOff: { entry: [waitForBackoff] },
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
          on: onPhaseResult("cleanup", {
            completed: "release",
            failed: "releaseAfterFailure",
            deadline: "release",
          }),
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
