/**
 * Resumable steps trust only the controller's own record (third security round, H1, for every kind):
 * progress annotations an author patches mid-run, backwards or forwards, change nothing; a task an
 * earlier controller left in flight (progress in annotations signed with its UID, no record) resumes
 * where it was; a step that fails the task undoes the finished steps in the same call (M5), and the
 * record goes with the task. Under the memory interpreter; the real one is in
 * test/integration/quorum-recovery-forged-progress.test.ts.
 */
import { describe, expect, it } from "vitest";
import {
  chore,
  drive,
  makeStepsWorld,
  progressPrefix,
  runCounts,
  type StepsWorld,
} from "../property/steps-world.ts";

const completedKey = `${progressPrefix}-last-completed-step`;
const waitKey = `${progressPrefix}-wait-start`;
const uidOf = (world: StepsWorld) => world.sim.get("t")?.metadata.uid ?? "";
const recordedStep = (world: StepsWorld) => world.sim.records.get(uidOf(world))?.lastCompletedStep;

describe("resumable steps take no progress an author writes", () => {
  it("a step rewound mid-run runs no step again", async () => {
    const world = makeStepsWorld();
    world.sim.create(chore("t"));
    await drive(world, "t", () => recordedStep(world) === "DeleteVolumes");
    world.sim.patch("t", { metadata: { annotations: { [completedKey]: "Prepare", [waitKey]: null } } });
    await drive(world, "t");
    expect(world.sim.state("t")).toBe("Succeeded");
    expect(runCounts(world, uidOf(world))).toEqual({
      Prepare: 1,
      ScaleDown: 1,
      DeleteVolumes: 1,
      ScaleOut: 1,
    });
  });

  it("a step moved forward mid-run skips nothing", async () => {
    const world = makeStepsWorld();
    world.sim.create(chore("t"));
    await drive(world, "t", () => recordedStep(world) === "Prepare");
    world.sim.patch("t", { metadata: { annotations: { [completedKey]: "WaitReady" } } });
    await drive(world, "t");
    expect(world.sim.state("t")).toBe("Succeeded");
    expect(runCounts(world, uidOf(world))).toEqual({
      Prepare: 1,
      ScaleDown: 1,
      DeleteVolumes: 1,
      ScaleOut: 1,
    });
  });

  it("a task an earlier controller left in flight resumes where its annotations say", async () => {
    const world = makeStepsWorld({ ready: [] });
    world.sim.create(chore("t"));
    await drive(world, "t", () => world.ran.some((run) => run.step === "ScaleDown"));
    const uid = uidOf(world);
    // As the earlier controller left it: progress on the task, signed with its UID, and no record.
    world.sim.records.delete(uid);
    world.sim.patch("t", {
      metadata: {
        annotations: {
          [completedKey]: "DeleteVolumes",
          [waitKey]: null,
          [`${progressPrefix}-task-uid`]: uid,
        },
      },
    });
    for (const step of ["ScaleDown", "WaitReady"] as const) world.ready.add(step);
    await drive(world, "t");
    expect(world.sim.state("t")).toBe("Succeeded");
    expect(runCounts(world, uid)).toEqual({ Prepare: 1, ScaleDown: 1, ScaleOut: 1 });
    // The earlier controller's extra annotation is gone from the mirror.
    const metadata = world.sim.object("t")?.metadata as { annotations?: Record<string, string> } | undefined;
    const annotations = metadata?.annotations;
    expect(annotations?.[`${progressPrefix}-task-uid`]).toBeUndefined();
  });

  it("a step that fails the task undoes the finished steps at once; Cleanup removes the record", async () => {
    const world = makeStepsWorld({ ready: ["ScaleDown"] });
    world.sim.create(chore("t"));
    await drive(world, "t");
    expect(world.sim.state("t")).toBe("Failed");
    expect(world.sim.exists("t")).toBe(true);
    expect(world.undone.map((undo) => undo.step)).toEqual(["DeleteVolumes", "ScaleDown"]);
    const uid = uidOf(world);
    expect(world.sim.records.has(uid)).toBe(true);
    world.sim.delete("t");
    await drive(world, "t");
    expect(world.sim.exists("t")).toBe(false);
    expect(world.undone.map((undo) => undo.step)).toEqual(["DeleteVolumes", "ScaleDown"]);
    expect(world.sim.records.has(uid)).toBe(false);
  });
});
