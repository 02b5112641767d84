/**
 * A model of one schedule's world for the decider's properties: an API server holding the runs and
 * the schedule's status, a wall clock that tests step forwards and backwards, and the steps that can
 * happen — a leader's pass, a pass cut short after its status write (the leader crashed before its create),
 * two deciders acting on the same stale state (a failover's split brain), runs finishing, cleanups
 * finishing, finished runs deleted by their TTL, suspend toggled. Every create the API server accepted is recorded with the decider's now.
 */

import * as Result from "effect/Result";
import fc from "fast-check";
import { parseCron } from "../../src/schedule/cron-times.ts";
import {
  type ConcurrencyPolicy,
  decide,
  type ScheduleDecision,
  type ScheduleRules,
} from "../../src/schedule/decide.ts";
import type { ObservedRun } from "../../src/schedule/observed-run.ts";
import type { ScheduleStatus } from "../../src/schedule/schedule-status.ts";

export interface ModelRun {
  readonly name: string;
  readonly scheduledTime: number;
  phase: ObservedRun["phase"];
  finishedAt?: number;
  deleting: boolean;
}

export interface CreateRecord {
  readonly name: string;
  readonly scheduledTime: number;
  /** The decider's clock when it decided. */
  readonly decidedAt: number;
  readonly policy: ConcurrencyPolicy;
  readonly suspended: boolean;
  /** Runs not finished when the create landed (names). */
  readonly activeAtCreate: ReadonlyArray<string>;
}

export interface DeleteRecord {
  readonly name: string;
  readonly reason: string;
  readonly phase: ObservedRun["phase"];
  readonly scheduledTime: number;
}

export type Step =
  | { readonly type: "advance"; readonly ms: number }
  | { readonly type: "pass" }
  | { readonly type: "crashedPass" }
  | { readonly type: "splitBrain" }
  | { readonly type: "finish"; readonly index: number; readonly outcome: "Succeeded" | "Failed" }
  | { readonly type: "cleanup" }
  | { readonly type: "ttl" }
  | { readonly type: "toggleSuspend" };

const minute = 60_000;
const hour = 60 * minute;

export const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.integer({ min: 1_000, max: 10 * minute }).map((ms) => ({ type: "advance" as const, ms })),
  },
  // A controller down for hours (or a clock step forwards).
  {
    weight: 1,
    arbitrary: fc.integer({ min: hour, max: 48 * hour }).map((ms) => ({ type: "advance" as const, ms })),
  },
  // A clock step backwards.
  {
    weight: 1,
    arbitrary: fc.integer({ min: -2 * hour, max: -1_000 }).map((ms) => ({ type: "advance" as const, ms })),
  },
  { weight: 6, arbitrary: fc.constant({ type: "pass" as const }) },
  { weight: 1, arbitrary: fc.constant({ type: "crashedPass" as const }) },
  { weight: 1, arbitrary: fc.constant({ type: "splitBrain" as const }) },
  {
    weight: 3,
    arbitrary: fc
      .record({ index: fc.nat(5), outcome: fc.constantFrom("Succeeded" as const, "Failed" as const) })
      .map((finish) => ({ type: "finish" as const, ...finish })),
  },
  { weight: 2, arbitrary: fc.constant({ type: "cleanup" as const }) },
  // Finished runs deleted by their own TTL (the task controller's, not the schedule's).
  { weight: 1, arbitrary: fc.constant({ type: "ttl" as const }) },
  { weight: 1, arbitrary: fc.constant({ type: "toggleSuspend" as const }) },
);

export const rulesArb: fc.Arbitrary<ScheduleRules> = fc.record({
  schedule: fc.constantFrom("* * * * *", "*/5 * * * *", "0 * * * *", "30 2 * * *", "15 */3 * * 1-5"),
  timeZone: fc.constantFrom("UTC", "Europe/Berlin", "America/New_York"),
  suspend: fc.constant(false),
  concurrencyPolicy: fc.constantFrom("Forbid" as const, "Allow" as const, "Replace" as const),
  startingDeadlineSeconds: fc.constantFrom(undefined, 30, 300, 3_600),
  successfulRunsHistoryLimit: fc.integer({ min: 0, max: 3 }),
  failedRunsHistoryLimit: fc.integer({ min: 0, max: 3 }),
});

/** Starts around 2026-03-08, a daylight-saving change in New York. */
export const startArb = fc
  .integer({ min: 0, max: 3 * 24 * hour })
  .map((offset) => Date.UTC(2026, 2, 6) + offset);

export interface ScenarioInput {
  readonly rules: ScheduleRules;
  readonly start: number;
  readonly steps: ReadonlyArray<Step>;
}

export const scenarioArb: fc.Arbitrary<ScenarioInput> = fc.record({
  rules: rulesArb,
  start: startArb,
  steps: fc.array(stepArb, { minLength: 1, maxLength: 60 }),
});

export class ScheduleWorld {
  now: number;
  rules: ScheduleRules;
  readonly createdAt: number;
  readonly runs = new Map<string, ModelRun>();
  status: ScheduleStatus = {};
  readonly creates: CreateRecord[] = [];
  readonly deletes: DeleteRecord[] = [];
  /** Creates answered AlreadyExists. */
  alreadyExists = 0;
  readonly decisions: Array<{
    readonly now: number;
    readonly decision: ScheduleDecision;
    readonly suspended: boolean;
  }> = [];
  /** Called after every step with the step; properties check here. */
  constructor(input: ScenarioInput) {
    this.now = input.start;
    this.createdAt = input.start;
    this.rules = input.rules;
  }

  view(): { readonly status: ScheduleStatus; readonly runs: ReadonlyArray<ObservedRun> } {
    return {
      status: structuredClone(this.status),
      runs: [...this.runs.values()].map((run) => ({
        name: run.name,
        scheduledTime: run.scheduledTime,
        phase: run.phase,
        ...(run.finishedAt === undefined ? {} : { finishedAt: run.finishedAt }),
        deleting: run.deleting,
      })),
    };
  }

  decideOn(view: ReturnType<ScheduleWorld["view"]>): ScheduleDecision {
    const decision = decide(
      { name: "nightly", createdAt: this.createdAt, rules: this.rules, status: view.status },
      this.now,
      view.runs,
    );
    this.decisions.push({ now: this.now, decision, suspended: this.rules.suspend });
    return decision;
  }

  /**
   * What the controller does with a decision: the status first (it records the scheduled time as
   * handled), then the create, then the deletions. `crash: "afterStatus"` stops after the status write.
   */
  perform(decision: ScheduleDecision, crash?: "afterStatus"): void {
    this.status = decision.status;
    if (crash === "afterStatus") return;
    if (decision.create !== undefined) {
      if (this.runs.has(decision.create.name)) this.alreadyExists += 1;
      else {
        this.creates.push({
          ...decision.create,
          decidedAt: this.now,
          policy: this.rules.concurrencyPolicy,
          suspended: this.rules.suspend,
          activeAtCreate: [...this.runs.values()]
            .filter((run) => run.phase === "Active")
            .map((run) => run.name),
        });
        this.runs.set(decision.create.name, { ...decision.create, phase: "Active", deleting: false });
      }
    }
    for (const { name, reason } of decision.delete) {
      const run = this.runs.get(name);
      if (run === undefined || run.deleting) continue;
      this.deletes.push({ name, reason, phase: run.phase, scheduledTime: run.scheduledTime });
      // A finished run goes at once; an active one runs its cleanup first.
      if (run.phase === "Active") run.deleting = true;
      else this.runs.delete(name);
    }
  }

  apply(step: Step): void {
    switch (step.type) {
      case "advance":
        this.now += step.ms;
        return;
      case "pass":
        this.perform(this.decideOn(this.view()));
        return;
      case "crashedPass":
        this.perform(this.decideOn(this.view()), "afterStatus");
        return;
      case "splitBrain": {
        const stale = this.view();
        const first = this.decideOn(stale);
        const second = this.decideOn(stale);
        this.perform(first);
        this.perform(second);
        return;
      }
      case "finish": {
        const active = [...this.runs.values()].filter((run) => run.phase === "Active" && !run.deleting);
        const run = active[step.index % Math.max(1, active.length)];
        if (run === undefined) return;
        run.phase = step.outcome;
        run.finishedAt = this.now;
        return;
      }
      case "ttl":
        for (const [name, run] of this.runs) if (run.phase !== "Active") this.runs.delete(name);
        return;
      case "cleanup":
        for (const [name, run] of this.runs) if (run.deleting) this.runs.delete(name);
        return;
      case "toggleSuspend":
        this.rules = { ...this.rules, suspend: !this.rules.suspend };
        return;
    }
  }
}

/** The cron's own answer, for checks that must not trust the decider. */
export const cronOf = (rules: ScheduleRules) => {
  const parsed = parseCron(rules.schedule, rules.timeZone);
  if (Result.isFailure(parsed)) throw new Error(parsed.failure);
  return parsed.success;
};

/** Runs a scenario, calling `check` after every step. */
export const runScenario = (
  input: ScenarioInput,
  check: (world: ScheduleWorld, step: Step) => void,
): ScheduleWorld => {
  const world = new ScheduleWorld(input);
  for (const step of input.steps) {
    world.apply(step);
    check(world, step);
  }
  return world;
};
