/**
 * How long unfinished tasks have been in their current phase, for the "stuck in one phase" alert:
 * `opstask_task_phase_seconds_max{kind,phase}` (the longest per handler phase, 0 when none) and
 * `opstask_phase_deadline_seconds{kind}` when a phase deadline is set. Where a task is comes from each
 * pass's end (the persisted `lastOperation`; a finished task is in cleanup once deleted) and from each
 * handler call's start (so a call that hangs counts from its start). A task is forgotten when it
 * finishes or is gone: the table holds at most the unfinished tasks of the cache.
 */
import * as Effect from "effect/Effect";
import { Gauge, type Registry } from "prom-client";
import type { OperationType } from "../api/status.ts";
import type { HandlerRegistry, TaskHandler } from "../handlers/handler.ts";
import type { HandlerContext } from "../handlers/handler-context.ts";
import type { Phase, PhaseOutcome } from "../machine/types.ts";
import type { Pass } from "../reconcile/pass.ts";
import type { TaskKind } from "../reconcile/task-kind.ts";
import type { ControllerObserver } from "../runtime/metrics.ts";

const phaseOf: Readonly<Record<OperationType, Phase>> = {
  Admit: "admit",
  Execution: "execute",
  Cleanup: "cleanup",
};
const phases: ReadonlyArray<Phase> = ["admit", "execute", "cleanup"];
const finishedStates: ReadonlySet<string> = new Set(["Succeeded", "Failed", "Rejected"]);

export interface PhaseAges {
  readonly observer: ControllerObserver;
  /** `handlers`, each call first marking its task as in the call's phase. */
  readonly handlers: <Task, R>(
    handlers: HandlerRegistry<Task, R>,
    kind: TaskKind<Task>,
  ) => HandlerRegistry<Task, R>;
  /** The longest time (s) an unfinished task has been in each phase, at `now`. */
  readonly oldest: (now: number) => Readonly<Record<Phase, number>>;
}

export const makePhaseAges = (now: () => number = Date.now): PhaseAges => {
  const where = new Map<string, { readonly phase: Phase; readonly since: number }>();
  const mark = (uid: string, phase: Phase): void => {
    if (where.get(uid)?.phase !== phase) where.set(uid, { phase, since: now() });
  };
  const observer: ControllerObserver = {
    passEnded: () => {},
    taskFinished: (_labels, _seconds, uid) => {
      if (uid !== undefined) where.delete(uid);
    },
    taskGone: (uid) => where.delete(uid),
    passTransitions: (task, pass: Pass) => {
      const context = pass.snapshot.context;
      const status = context.persisted;
      const deleting = context.deletingSince !== undefined;
      if (!deleting && status.state !== undefined && finishedStates.has(status.state)) where.delete(task.uid);
      else if (deleting) mark(task.uid, "cleanup");
      else mark(task.uid, status.lastOperation === undefined ? "admit" : phaseOf[status.lastOperation.type]);
    },
  };
  const handlers = <Task, R>(
    registry: HandlerRegistry<Task, R>,
    kind: TaskKind<Task>,
  ): HandlerRegistry<Task, R> => {
    const wrap =
      (phase: Phase, call: TaskHandler<Task, R>[Phase]) =>
      (task: Task, context: HandlerContext): Effect.Effect<PhaseOutcome, never, R> =>
        Effect.suspend(() => {
          mark(kind.facts(task).metadata.uid, phase);
          return call(task, context);
        });
    return Object.fromEntries(
      Object.entries(registry).map(([member, handler]) => [
        member,
        {
          admit: wrap("admit", handler.admit),
          execute: wrap("execute", handler.execute),
          cleanup: wrap("cleanup", handler.cleanup),
        },
      ]),
    );
  };
  const oldest = (at: number): Record<Phase, number> => {
    const result: Record<Phase, number> = { admit: 0, execute: 0, cleanup: 0 };
    for (const { phase, since } of where.values())
      result[phase] = Math.max(result[phase], (at - since) / 1000);
    return result;
  };
  return { observer, handlers, oldest };
};

/** The two gauges, read when scraped. */
export const registerPhaseAgeMetrics = (
  registry: Registry,
  kind: string,
  ages: PhaseAges,
  phaseDeadlineMs: number | undefined,
  prefix = "opstask_",
): void => {
  new Gauge({
    name: `${prefix}task_phase_seconds_max`,
    help: "Longest time an unfinished task has been in its current phase (admit, execute, cleanup); 0 when none is",
    labelNames: ["kind", "phase"] as const,
    registers: [registry],
    collect() {
      const oldest = ages.oldest(Date.now());
      for (const phase of phases) this.set({ kind, phase }, oldest[phase]);
    },
  });
  if (phaseDeadlineMs !== undefined && phaseDeadlineMs > 0) {
    const deadline = new Gauge({
      name: `${prefix}phase_deadline_seconds`,
      help: "The phase deadline (--phase-deadline): a phase failing transiently this long ends its task",
      labelNames: ["kind"] as const,
      registers: [registry],
    });
    deadline.set({ kind }, phaseDeadlineMs / 1000);
  }
};
