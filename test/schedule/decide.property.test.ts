/**
 * The schedule decider's rules as properties over random histories (test/schedule/schedule-world.ts):
 * passes, passes whose status write was lost, two deciders on one stale state, outages of hours,
 * clock steps both ways, runs finishing, cleanups, suspend toggled. Each rule is checked after every
 * step, independently of how the decider computes it (the cron's own answers, the model's records).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { lastHandledTime } from "../../src/schedule/decide.ts";
import { rfc3339 } from "../../src/schedule/run-names.ts";
import {
  cronOf,
  runScenario,
  type ScenarioInput,
  type ScheduleWorld,
  type Step,
  scenarioArb,
} from "./schedule-world.ts";

const numRuns = Number(process.env.OPSTASK_PROPERTY_RUNS ?? 300);

const holds = (check: (world: ScheduleWorld, step: Step, before: BeforeStep) => void) =>
  fc.assert(
    fc.property(scenarioArb, (input: ScenarioInput) => {
      let before: BeforeStep = beforeOf(undefined, input);
      runScenario(input, (world, step) => {
        check(world, step, before);
        before = beforeOf(world, input);
      });
    }),
    { numRuns },
  );

/** What the world looked like before a step, for rules about what a step changed. */
interface BeforeStep {
  readonly handled: number | undefined;
  readonly activeNotDeleting: ReadonlyArray<string>;
  readonly createdAt: number;
}
const beforeOf = (world: ScheduleWorld | undefined, input: ScenarioInput): BeforeStep =>
  world === undefined
    ? { handled: undefined, activeNotDeleting: [], createdAt: input.start }
    : {
        handled: lastHandledTime(world.status, world.view().runs),
        activeNotDeleting: [...world.runs.values()]
          .filter((run) => run.phase === "Active" && !run.deleting)
          .map((run) => run.name),
        createdAt: world.createdAt,
      };

const everyMinute = {
  schedule: "* * * * *",
  timeZone: "UTC",
  suspend: false,
  concurrencyPolicy: "Allow",
  successfulRunsHistoryLimit: 3,
  failedRunsHistoryLimit: 1,
} as const;
const minuteStart = Date.UTC(2026, 0, 1);

describe("a scheduled time gets at most one run", () => {
  it("across failovers, lost status writes, outages and clock steps both ways", () =>
    holds((world) => {
      const times = world.creates.map((create) => create.scheduledTime);
      expect(new Set(times).size).toBe(times.length);
    }));

  it("a run its TTL deleted before the next pass is not created again", () => {
    const world = runScenario(
      {
        rules: everyMinute,
        start: minuteStart,
        steps: [
          { type: "advance", ms: 61_000 },
          { type: "pass" },
          { type: "finish", index: 0, outcome: "Succeeded" },
          { type: "ttl" },
          { type: "advance", ms: 5_000 },
          { type: "pass" },
        ],
      },
      () => undefined,
    );
    expect(world.creates.map((create) => create.name)).toEqual(["nightly-29453761"]);
  });

  it("two deciders on one stale state create one run; the other gets AlreadyExists", () => {
    const world = runScenario(
      {
        rules: everyMinute,
        start: minuteStart,
        steps: [{ type: "advance", ms: 61_000 }, { type: "splitBrain" }],
      },
      () => undefined,
    );
    expect([world.creates.length, world.alreadyExists]).toEqual([1, 1]);
  });
});

describe("a backlog never fires more than one catch-up run", () => {
  it("every run is for the most recent scheduled time at or before the decider's now", () =>
    holds((world) => {
      const cron = cronOf(world.rules);
      for (const create of world.creates)
        expect(rfc3339(create.scheduledTime)).toBe(
          rfc3339(cron.latestAtOrBefore(create.decidedAt) ?? Number.NaN),
        );
    }));

  it("a controller down for 48 hours with a one-minute cron creates one run and records the rest as superseded", () => {
    const start = Date.UTC(2026, 0, 1);
    const world = runScenario(
      {
        rules: {
          schedule: "* * * * *",
          timeZone: "UTC",
          suspend: false,
          concurrencyPolicy: "Allow",
          successfulRunsHistoryLimit: 3,
          failedRunsHistoryLimit: 1,
        },
        start,
        steps: [{ type: "advance", ms: 48 * 3_600_000 }, { type: "pass" }, { type: "pass" }],
      },
      () => undefined,
    );
    expect(world.creates.map((create) => create.scheduledTime)).toEqual([start + 48 * 3_600_000]);
    expect(world.status.skippedRuns?.map((skip) => [skip.reason, skip.message])).toEqual([
      ["Superseded", expect.stringMatching(/^20 or more scheduled time\(s\) from 2026-01-01T00:01:00Z/u)],
    ]);
  });
});

describe("Forbid never overlaps two runs", () => {
  it("no run is created while another is unfinished", () =>
    holds((world) => {
      if (world.rules.concurrencyPolicy !== "Forbid") return;
      const active = [...world.runs.values()].filter((run) => run.phase === "Active");
      expect(active.length).toBeLessThanOrEqual(1);
      for (const create of world.creates) expect(create.activeAtCreate).toEqual([]);
    }));
});

describe("Replace deletes the active run first", () => {
  it("a due time with a run still active deletes that run, and the new one starts once it is gone", () =>
    holds((world, step, before) => {
      if (world.rules.concurrencyPolicy !== "Replace") return;
      for (const create of world.creates) expect(create.activeAtCreate).toEqual([]);
      if (step.type !== "pass" || world.rules.suspend) return;
      const due = cronOf(world.rules).latestAtOrBefore(world.now);
      const deadline = world.rules.startingDeadlineSeconds;
      const isDue =
        due !== undefined &&
        due > (before.handled ?? before.createdAt) &&
        (deadline === undefined || world.now - due <= deadline * 1000);
      if (!isDue) return;
      for (const name of before.activeNotDeleting) {
        const run = world.runs.get(name);
        if (run?.phase === "Active") expect(run.deleting).toBe(true);
      }
    }));
});

describe("history limits", () => {
  it("after a pass, finished runs beyond the limits are deleted, oldest first", () =>
    holds((world, step) => {
      if (step.type !== "pass" && step.type !== "splitBrain") return;
      for (const [phase, limit] of [
        ["Succeeded", world.rules.successfulRunsHistoryLimit],
        ["Failed", world.rules.failedRunsHistoryLimit],
      ] as const) {
        const kept = [...world.runs.values()].filter((run) => run.phase === phase && !run.deleting);
        expect(kept.length).toBeLessThanOrEqual(limit);
        const newestDeleted = Math.max(
          ...world.deletes
            .filter((d) => d.reason === "HistoryLimit" && d.phase === phase)
            .map((d) => d.scheduledTime),
        );
        for (const run of kept) expect(run.scheduledTime).toBeGreaterThan(newestDeleted);
      }
    }));
});

describe("suspend stops creates", () => {
  it("no run is created while the schedule is suspended", () =>
    holds((world) => {
      for (const create of world.creates) expect(create.suspended).toBe(false);
    }));
});

describe("a missed window beyond startingDeadlineSeconds", () => {
  it("gets no run and is recorded as MissedDeadline", () =>
    holds((world, step, before) => {
      const deadline = world.rules.startingDeadlineSeconds;
      if (deadline === undefined) return;
      for (const create of world.creates)
        expect(create.decidedAt - create.scheduledTime).toBeLessThanOrEqual(deadline * 1000);
      if (step.type !== "pass" || world.rules.suspend) return;
      const due = cronOf(world.rules).latestAtOrBefore(world.now);
      if (
        due === undefined ||
        due <= (before.handled ?? before.createdAt) ||
        world.now - due <= deadline * 1000
      )
        return;
      expect(world.status.skippedRuns).toContainEqual(
        expect.objectContaining({ scheduledTime: rfc3339(due), reason: "MissedDeadline" }),
      );
    }));
});

describe("a decision never asks to be woken in the past", () => {
  it("requeueAt is after the decider's now", () =>
    holds((world) => {
      for (const { now, decision } of world.decisions)
        if (decision.requeueAt !== undefined) expect(decision.requeueAt).toBeGreaterThan(now);
    }));
});
