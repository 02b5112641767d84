/**
 * What the Stately inspector is shown of one reconcile pass, as plain data: the events the pass
 * received (`reconcile`, then each handler result as `phase.*`), each with the microsteps it caused,
 * and snapshots reduced to what a viewer needs. Pure, so the messages can be tested without a socket.
 */
import type { TaskState, TaskStatus } from "../api/status.ts";
import { contextOf, type TaskContext } from "../machine/task-machine.ts";
import type { KnownResult, Phase } from "../machine/types.ts";
import type { Pass } from "../reconcile/pass.ts";

/** One event of a pass. `steps` are the microsteps it caused (`from → to`), eventless ones included. */
export interface InspectedEvent {
  readonly type: string;
  /** For `phase.*`: which handler phase answered. */
  readonly phase?: Phase;
  /** For `reconcile`: the pass's reconcile ID. */
  readonly runId?: string;
  readonly steps: ReadonlyArray<string>;
}

/**
 * The context as the viewer sees it: the statuses (`status` as the pass wants it, `persisted` as
 * written) and the facts the guards decide on. The lifecycle config and the peers' details are left
 * out (large, and the same for every task); `peers` is their count.
 */
export interface InspectedContext {
  readonly state: TaskState | undefined;
  readonly status: TaskStatus;
  readonly persisted: TaskStatus;
  readonly ownsFinalizer: boolean;
  readonly deletingSince: number | undefined;
  readonly replayed: boolean;
  readonly now: number;
  readonly runId: string;
  readonly retries: number;
  readonly retryAt: number | undefined;
  readonly known: KnownResult | undefined;
  readonly peers: number;
  readonly task: {
    readonly namespace: string;
    readonly name: string;
    readonly uid: string;
    readonly createdAt: number;
    readonly finalizers: ReadonlyArray<string>;
    readonly ttlSeconds: number;
    readonly group: string | undefined;
    readonly machineVersion: number | undefined;
    readonly unsupported: string | undefined;
  };
}

export interface InspectedSnapshot {
  readonly status: "active" | "done" | "error" | "stopped";
  readonly value: unknown;
  readonly context: InspectedContext;
}

export const inspectedContext = (context: TaskContext): InspectedContext => {
  const { input } = context;
  const { task } = input;
  return {
    state: context.status.state,
    status: context.status,
    persisted: context.persisted,
    ownsFinalizer: context.ownsFinalizer,
    deletingSince: context.deletingSince,
    replayed: context.replayed,
    now: context.now,
    runId: input.runId,
    retries: input.retries,
    retryAt: input.retryAt,
    known: input.known,
    peers: input.peers.length,
    task: {
      namespace: task.namespace,
      name: task.name,
      uid: task.uid,
      createdAt: task.createdAt,
      finalizers: task.finalizers,
      ttlSeconds: task.ttlSeconds,
      group: task.group,
      machineVersion: task.machineVersion,
      unsupported: task.unsupported === undefined ? undefined : task.unsupported.code,
    },
  };
};

/** Where the pass started: `idle`, with the context rebuilt from the object (as `start` in src/reconcile/pass.ts does). */
export const startSnapshot = (pass: Pass): InspectedSnapshot => ({
  status: "active",
  value: "idle",
  context: inspectedContext(contextOf(pass.snapshot.context.input)),
});

/** Where the pass ended (or stopped, when a write failed). */
export const finalSnapshot = (pass: Pass): InspectedSnapshot => ({
  status: pass.snapshot.status,
  value: pass.snapshot.value,
  context: inspectedContext(pass.snapshot.context),
});

/** The compound state a handler is called from names the phase that answered. */
const phaseOfState: Readonly<Record<string, Phase>> = {
  admission: "admit",
  execution: "execute",
  deletion: "cleanup",
};

/** The pass's events in order, each with the microsteps it caused. */
export const passEvents = (pass: Pass): InspectedEvent[] => {
  const events: { type: string; phase?: Phase; runId?: string; steps: string[] }[] = [];
  for (const step of pass.transitions) {
    if (step.event !== "always" || events.length === 0) {
      const phase = phaseOfState[step.from.split(".")[0] ?? ""];
      events.push({
        type: step.event,
        ...(step.event === "reconcile" ? { runId: pass.snapshot.context.input.runId } : {}),
        ...(step.event.startsWith("phase.") && phase !== undefined ? { phase } : {}),
        steps: [],
      });
    }
    events.at(-1)?.steps.push(`${step.from} → ${step.to}`);
  }
  return events;
};
