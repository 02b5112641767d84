/**
 * Issue 26, point 2: the resumable-steps primitive (src/library/steps) under the memory interpreter,
 * checked at every point where it can be interrupted: a crash just before and just after each progress
 * write, a label edit and a deletion at each step boundary, a second task under the same name or from
 * a copy of the first's manifest, and each wait's deadline.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { StepErrorCodes } from "../../src/advanced.ts";
import {
  chore,
  deadlines,
  drive,
  type Fault,
  makeStepsWorld,
  progressPrefix,
  runCounts,
  type StepName,
  type StepsWorld,
  stepNames,
} from "./steps-world.ts";

const completedKey = `${progressPrefix}-last-completed-step`;
const waitKey = `${progressPrefix}-wait-start`;
const withRun: ReadonlySet<StepName> = new Set(["Prepare", "ScaleDown", "DeleteVolumes", "ScaleOut"]);
const withWait: ReadonlySet<StepName> = new Set(["ScaleDown", "WaitReady"]);

const uidOf = (world: StepsWorld, name: string) => world.sim.get(name)?.metadata.uid ?? "";

/** The rule: no step runs again once its completion (or a later step's) was recorded for its task. */
const checkRecordedNeverRunsAgain = (world: StepsWorld) => {
  const recorded = new Map<string, number>();
  for (const entry of world.log) {
    if (entry.kind === "recorded") {
      const index = stepNames.indexOf(entry.completed as StepName);
      if (index > (recorded.get(entry.uid) ?? -1)) recorded.set(entry.uid, index);
      continue;
    }
    const done = recorded.get(entry.uid) ?? -1;
    expect(
      stepNames.indexOf(entry.step),
      `${entry.step} ran after its completion was recorded`,
    ).toBeGreaterThan(done);
  }
};

/** A fault-free run, to count the progress writes and learn what each records. */
const baseline = async () => {
  const world = makeStepsWorld();
  world.sim.create(chore("t"));
  await drive(world, "t");
  return world.progressWrites.map((write) => write.annotations);
};

/** The step a progress write is about, and whether it starts a wait (or records a completion). */
const aboutStep = (annotations: Readonly<Record<string, string | null>>) => {
  const completed = annotations[completedKey];
  const index = completed === null || completed === undefined ? -1 : stepNames.indexOf(completed as StepName);
  return typeof annotations[waitKey] === "string"
    ? { step: stepNames[index + 1] as StepName, startsWait: true }
    : { step: stepNames[index] as StepName, startsWait: false };
};

describe("resumable steps: a crash just before and just after every progress write", async () => {
  const writes = await baseline();

  it("records 7 writes: five completions and two wait starts", () => {
    expect(writes).toHaveLength(7);
  });

  for (const [at, annotations] of writes.entries())
    for (const mode of ["before", "after"] as const) {
      const { step, startsWait } = aboutStep(annotations);
      it(`write ${at + 1} (${startsWait ? "wait start of" : "completion of"} ${step}), crash ${mode} it: the task succeeds, and only an unrecorded run repeats`, async () => {
        const world = makeStepsWorld();
        world.fault = { at, mode } satisfies Fault;
        world.sim.create(chore("t"));
        await drive(world, "t");
        expect(world.fault, "the fault fired").toBeUndefined();
        expect(world.sim.state("t")).toBe("Succeeded");
        checkRecordedNeverRunsAgain(world);
        // The run that the lost write would have protected runs again; every other step once. A
        // completion write after a wait is protected by the wait start written before it.
        const repeats = mode === "before" && withRun.has(step) && (startsWait || !withWait.has(step));
        const expected = Object.fromEntries(
          [...withRun].map((name) => [name, name === step && repeats ? 2 : 1]),
        );
        expect(runCounts(world, uidOf(world, "t"))).toEqual(expected);
      });
    }
});

/** Drives `t` until `boundary` steps have completed (their completion recorded). */
const toBoundary = async (world: StepsWorld, boundary: number) => {
  world.sim.create(chore("t"));
  await drive(world, "t", () => {
    const completed = world.sim.object("t")?.metadata;
    const annotations = (completed as { annotations?: Record<string, string> } | undefined)?.annotations;
    return stepNames.indexOf((annotations?.[completedKey] ?? "") as StepName) + 1 >= boundary;
  });
};

describe("resumable steps: a label edit or a deletion at every step boundary", () => {
  for (let boundary = 0; boundary < stepNames.length; boundary++) {
    it(`after ${boundary} steps, a label edit: every step runs once and the task succeeds`, async () => {
      const world = makeStepsWorld();
      await toBoundary(world, boundary);
      world.sim.patch("t", { metadata: { labels: { edited: "yes" } } });
      await drive(world, "t");
      expect(world.sim.state("t")).toBe("Succeeded");
      checkRecordedNeverRunsAgain(world);
      expect(runCounts(world, uidOf(world, "t"))).toEqual({
        Prepare: 1,
        ScaleDown: 1,
        DeleteVolumes: 1,
        ScaleOut: 1,
      });
    });

    it(`after ${boundary} steps, a deletion: no step runs afterwards, nothing is undone, the task goes`, async () => {
      const world = makeStepsWorld();
      await toBoundary(world, boundary);
      const ranBefore = world.ran.length;
      world.sim.delete("t");
      await drive(world, "t");
      expect(world.sim.exists("t")).toBe(false);
      expect(world.ran).toHaveLength(ranBefore);
      expect(world.undone).toEqual([]);
    });

    it(`after ${boundary} steps deleted, a new task of the same name starts at step 1`, async () => {
      const world = makeStepsWorld();
      await toBoundary(world, boundary);
      const first = uidOf(world, "t");
      world.sim.delete("t");
      await drive(world, "t");
      world.sim.create(chore("t"));
      await drive(world, "t");
      const second = uidOf(world, "t");
      expect(second).not.toBe(first);
      expect(world.sim.state("t")).toBe("Succeeded");
      expect(runCounts(world, second)).toEqual({ Prepare: 1, ScaleDown: 1, DeleteVolumes: 1, ScaleOut: 1 });
    });
  }

  it("a task created from a copy of a half-done task's manifest (its annotations included) is Rejected with ERR_FORGED_PROGRESS, and runs no step", async () => {
    const world = makeStepsWorld();
    await toBoundary(world, 3);
    const copied = world.sim.object("t")?.metadata as { annotations: Record<string, string> };
    world.sim.create(chore("copy", copied.annotations));
    await drive(world, "copy");
    expect(world.sim.state("copy")).toBe("Rejected");
    const error = world.sim.status("copy")?.lastErrors?.at(-1);
    expect(error?.code).toBe(StepErrorCodes.forgedProgress);
    expect(error?.description).toContain(`create the task without ${completedKey}`);
    expect(runCounts(world, uidOf(world, "copy"))).toEqual({});
  });
});

describe("resumable steps: every deadline ends the task with an error naming its step", () => {
  for (const [name, deadline] of Object.entries(deadlines) as Array<[StepName, number]>) {
    const index = stepNames.indexOf(name);
    it(`${name} never ready: Failed after ${deadline / 1000}s with ERR_STEP_DEADLINE_EXCEEDED naming step ${index + 1}/5 ${name}; Cleanup undoes what ran, in reverse`, async () => {
      const world = makeStepsWorld({ ready: stepNames.filter((step) => step !== name) });
      world.sim.create(chore("t"));
      let waitStarted: number | undefined;
      await drive(world, "t", () => {
        waitStarted ??= world.progressWrites.some(
          (write) => aboutStep(write.annotations).step === name && aboutStep(write.annotations).startsWait,
        )
          ? world.sim.now()
          : undefined;
        return false;
      });
      expect(world.sim.state("t")).toBe("Failed");
      const status = world.sim.status("t");
      const error = status?.lastErrors?.at(-1);
      expect(error?.code).toBe(StepErrorCodes.deadlineExceeded);
      expect(error?.description).toContain(
        `step ${index + 1}/5 ${name} did not finish within ${deadline / 1000}s`,
      );
      expect(status?.lastOperation?.description).toBe(
        `Step ${index + 1}/5 ${name}: did not finish within ${deadline / 1000}s`,
      );
      const waited = world.sim.now() - (waitStarted ?? Number.NaN);
      expect(waited).toBeGreaterThanOrEqual(deadline - 1_000); // the wait start is recorded in whole seconds
      expect(waited).toBeLessThanOrEqual(deadline + 5_000);
      expect(world.sim.events("t").map((event) => event.reason)).toContain("StepDeadlineExceeded");
      // Cleanup of the Failed task: the undos of every step whose run finished, last first.
      world.sim.delete("t");
      await drive(world, "t");
      expect(world.sim.exists("t")).toBe(false);
      const ranWithUndo = stepNames
        .slice(0, index + 1)
        .filter((step) => step === "ScaleDown" || step === "DeleteVolumes" || step === "ScaleOut")
        .filter((step) => world.ran.some((run) => run.step === step));
      expect(world.undone.map((undo) => undo.step)).toEqual([...ranWithUndo].reverse());
    });
  }
});

describe("resumable steps: progress that names no step of the task", () => {
  it("fails the task with ERR_STEP_PROGRESS_UNKNOWN naming the step, and runs no step", async () => {
    const world = makeStepsWorld();
    world.sim.create(chore("t"));
    // As a controller whose steps had other names left it in its record.
    world.sim.records.set(uidOf(world, "t"), { taskUid: uidOf(world, "t"), lastCompletedStep: "Teleport" });
    await drive(world, "t");
    expect(world.sim.state("t")).toBe("Failed");
    const error = world.sim.status("t")?.lastErrors?.at(-1);
    expect(error?.code).toBe(StepErrorCodes.progressUnknown);
    expect(error?.description).toContain(`lastCompletedStep names step "Teleport"`);
    expect(world.ran).toEqual([]);
  });
});

describe("resumable steps: random interleavings of crashes and label edits (fast-check)", () => {
  const runs = Math.ceil(Number(process.env.OPSTASK_PROPERTY_RUNS ?? 1_000) / 5);
  it(`the task succeeds, a recorded step never runs again, and only lost writes cost a repeat (${runs} interleavings)`, async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.tuple(fc.integer({ min: 0, max: 6 }), fc.constantFrom("before" as const, "after" as const)),
          {
            maxLength: 4,
          },
        ),
        fc.array(fc.integer({ min: 0, max: 30 }), { maxLength: 4 }),
        async (faults, edits) => {
          const world = makeStepsWorld();
          for (const [at, mode] of faults) world.faults.set(at, mode);
          const editAt = new Set(edits);
          world.sim.create(chore("t"));
          let round = 0;
          await drive(world, "t", () => {
            round += 1;
            if (editAt.has(round) && world.sim.exists("t"))
              world.sim.patch("t", { metadata: { labels: { round: String(round) } } });
            return false;
          });
          expect(world.sim.state("t")).toBe("Succeeded");
          checkRecordedNeverRunsAgain(world);
          const lost = world.progressWrites.filter((write) => !write.landed).length;
          const total = Object.values(runCounts(world, uidOf(world, "t"))).reduce((sum, n) => sum + n, 0);
          expect(total).toBeGreaterThanOrEqual(4);
          expect(total).toBeLessThanOrEqual(4 + lost);
        },
      ),
      { numRuns: runs },
    );
  });
});
