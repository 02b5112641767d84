/**
 * A resumable task under simulation for the steps properties: five steps over a made-up world (a
 * log of runs and undos, and the conditions the waits poll), a fault injector on the progress writes
 * to the controller's record (a crash just before or just after the N-th one), and a driver that runs the lifecycle to its end.
 */

import { stepAnnotationNames } from "../../src/advanced.ts";
import type { TaskHandler } from "../../src/handlers/handler.ts";
import type { HandlerContext, OwnRecord } from "../../src/handlers/handler-context.ts";
import { promiseStep, stepsHandler } from "../../src/index.ts";
import {
  recordFields,
  type StepAnnotations,
  stepAnnotations,
} from "../../src/library/steps/step-progress.ts";
import { type Simulation, simulate } from "../../src/testing.ts";
import { type Chore, choreKind } from "../library/new-kind/chore-kind.ts";

export const stepNames = ["Prepare", "ScaleDown", "DeleteVolumes", "WaitReady", "ScaleOut"] as const;
export type StepName = (typeof stepNames)[number];
export const progressPrefix = "house.opstask.dev/chore";
export const deadlines = { ScaleDown: 60_000, WaitReady: 120_000 } as const;

export interface Fault {
  /** 0-based index of the progress write. */
  readonly at: number;
  /** `before`: the controller dies before the write lands; `after`: just after it landed. */
  readonly mode: "before" | "after";
}

export interface StepsWorld {
  readonly sim: Simulation<Chore>;
  /** Each run of a step, by task UID. */
  readonly ran: Array<{ readonly uid: string; readonly step: StepName }>;
  readonly undone: Array<{ readonly uid: string; readonly step: StepName }>;
  /** The waits whose condition holds. */
  readonly ready: Set<StepName>;
  /** Every progress write attempted, in order: the annotations it carried and whether it landed. */
  readonly progressWrites: Array<{
    readonly annotations: Readonly<Record<string, string | null>>;
    landed: boolean;
  }>;
  fault: Fault | undefined;
  /** More faults, by write index (for random interleavings); `fault` is checked first. */
  readonly faults: Map<number, Fault["mode"]>;
  /** Runs and landed progress writes, in the order they happened. */
  readonly log: Array<
    | { readonly kind: "run"; readonly uid: string; readonly step: StepName }
    | { readonly kind: "recorded"; readonly uid: string; readonly completed: string | null | undefined }
  >;
}

const runs = (world: StepsWorld, step: StepName) => (task: Chore) => {
  world.ran.push({ uid: task.metadata.uid, step });
  world.log.push({ kind: "run", uid: task.metadata.uid, step });
  return undefined;
};
const undoes = (world: StepsWorld, step: StepName) => (task: Chore) => {
  world.undone.push({ uid: task.metadata.uid, step });
  return undefined;
};

/** A record write as the progress annotations it stands for (the tests read them by those names). */
export const asAnnotations = (fields: Readonly<Record<string, string | null>>) =>
  Object.fromEntries(
    (Object.keys(recordFields) as Array<keyof StepAnnotations>)
      .filter((field) => recordFields[field] in fields)
      .map((field) => [stepAnnotations(progressPrefix)[field], fields[recordFields[field]] ?? null]),
  );

const faultyOwnRecord = (world: StepsWorld, own: OwnRecord, uid: string): OwnRecord => ({
  ...own,
  write: async (fields) => {
    const annotations = asAnnotations(fields);
    const index = world.progressWrites.length;
    const write = { annotations, landed: false };
    world.progressWrites.push(write);
    const queued = world.faults.get(index);
    const fault = world.fault ?? (queued === undefined ? undefined : { at: index, mode: queued });
    if (fault !== undefined && fault.at === index) {
      world.fault = undefined;
      world.faults.delete(index);
      // The controller dies before it performs anything more (the result's status write included).
      world.sim.controller.crashAfter(0);
      if (fault.mode === "before") throw new Error("the controller died before the progress write");
    }
    const stored = await own.write(fields);
    write.landed = true;
    world.log.push({
      kind: "recorded",
      uid,
      completed: annotations[`${progressPrefix}-last-completed-step`],
    });
    return stored;
  },
});

const withFaults = (world: StepsWorld, handler: TaskHandler<Chore>): TaskHandler<Chore> => {
  const context = (task: Chore, ctx: HandlerContext): HandlerContext =>
    ctx.ownRecord === undefined
      ? ctx
      : { ...ctx, ownRecord: faultyOwnRecord(world, ctx.ownRecord, task.metadata.uid) };
  return {
    admit: handler.admit,
    execute: (task, ctx) => handler.execute(task, context(task, ctx)),
    cleanup: (task, ctx) => handler.cleanup(task, context(task, ctx)),
  };
};

export const makeStepsWorld = (options: { readonly ready?: ReadonlyArray<StepName> } = {}): StepsWorld => {
  const world = {
    ran: [],
    undone: [],
    ready: new Set(options.ready ?? stepNames),
    progressWrites: [],
    fault: undefined,
    faults: new Map(),
    log: [],
  } as unknown as StepsWorld & { sim: Simulation<Chore> };
  const handler = stepsHandler(choreKind, {
    progress: progressPrefix,
    steps: [
      promiseStep({ name: "Prepare", run: runs(world, "Prepare") }),
      promiseStep({
        name: "ScaleDown",
        run: runs(world, "ScaleDown"),
        undo: undoes(world, "ScaleDown"),
        until: {
          check: () => world.ready.has("ScaleDown"),
          deadlineMs: deadlines.ScaleDown,
          pollMs: 5_000,
          waiting: "waiting for 0 replicas",
        },
      }),
      promiseStep({
        name: "DeleteVolumes",
        run: runs(world, "DeleteVolumes"),
        undo: undoes(world, "DeleteVolumes"),
      }),
      promiseStep({
        name: "WaitReady",
        until: { check: () => world.ready.has("WaitReady"), deadlineMs: deadlines.WaitReady },
      }),
      promiseStep({ name: "ScaleOut", run: runs(world, "ScaleOut"), undo: undoes(world, "ScaleOut") }),
    ],
  });
  const sim = simulate({
    kind: { ...choreKind, cachedMetadata: { annotations: stepAnnotationNames(progressPrefix) } },
    handlers: { sweep: withFaults(world, handler), ping: withFaults(world, handler) },
  });
  Object.assign(world, { sim });
  return world;
};

export const chore = (name: string, annotations?: Record<string, string>) => ({
  metadata: { name, ...(annotations === undefined ? {} : { annotations }) },
  spec: { ttlSecondsAfterFinished: 600, config: { sweep: { room: "hall" } } },
});

const finished = new Set(["Succeeded", "Failed", "Rejected"]);

/**
 * Runs passes, delivers handler results and moves the clock to the next timer, until `name` is
 * finished (or gone) and nothing is in flight; `stop` may end it earlier.
 */
export const drive = async (world: StepsWorld, name: string, stop?: () => boolean): Promise<void> => {
  const { sim } = world;
  for (let round = 0; round < 500; round++) {
    sim.run();
    await sim.settle();
    if (stop?.()) return;
    const state = sim.state(name);
    if ((state !== undefined && finished.has(state)) || !sim.exists(name)) {
      if (sim.hanging().length === 0) return;
    }
    const next = sim.nextTimer();
    if (next === undefined) return;
    sim.advance(Math.max(0, next - sim.now()));
  }
  throw new Error(`${name} did not finish in 500 rounds`);
};

/** How many times each step ran for the task with `uid`. */
export const runCounts = (world: StepsWorld, uid: string): Record<string, number> => {
  const counts: Record<string, number> = {};
  for (const run of world.ran) if (run.uid === uid) counts[run.step] = (counts[run.step] ?? 0) + 1;
  return counts;
};
