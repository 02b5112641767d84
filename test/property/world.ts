/**
 * The world the lifecycle properties run in: a simulated controller over the memory API server, the
 * handler scripts of each task, and the user's actions. Commands change the world; `checks.ts` judges it.
 */

import type { Behaviour } from "../../src/interpreters/memory/controller.ts";
import type { JsonObject } from "../../src/interpreters/memory/merge-patch.ts";
import type { DuplicatePolicy, Phase, PhaseOutcome } from "../../src/machine/types.ts";
import { namespace, simulation, taskObject } from "../support/simulation.ts";

export const foreignFinalizer = "example.com/keep";

/** What a task's handler does on each call of a phase, in order; once used up, it completes. */
export type Script = Record<Phase, Behaviour[]>;

export interface WorldOptions {
  readonly policy: DuplicatePolicy;
  readonly phaseDeadlineMs?: number;
}

export const makeWorld = (options: WorldOptions) => {
  const scripts = new Map<string, Script>();
  const sim = simulation(
    (task, phase) => {
      const script = scripts.get(task.metadata.name);
      return script?.[phase].shift() ?? { kind: "return", outcome: completedOutcome(phase) };
    },
    {
      duplicatePolicy: options.policy,
      requeueIntervalMs: 5_000,
      backoffCapMs: 5_000,
      ...(options.phaseDeadlineMs === undefined ? {} : { phaseDeadlineMs: options.phaseDeadlineMs }),
    },
  );
  return {
    ...sim,
    scripts,
    /** Foreign finalizers the user put on each object and has not removed. */
    foreign: new Set<string>(),
    /** Controller lives (epochs) in which a resync looked at every task. */
    resynced: new Set<number>(),
    created: [] as string[],
  };
};

export type World = ReturnType<typeof makeWorld>;

export const completedOutcome = (phase: Phase): PhaseOutcome => ({
  kind: "completed",
  description:
    phase === "execute" ? "Snapshot created successfully" : phase === "admit" ? "Admit check passed" : "",
});

export const metadataOf = (object: JsonObject): JsonObject => (object.metadata ?? {}) as JsonObject;

export const finalizersOf = (object: JsonObject): string[] => {
  const list = metadataOf(object).finalizers;
  return Array.isArray(list) ? list.filter((f): f is string => typeof f === "string") : [];
};

export const createTask = (
  world: World,
  name: string,
  etcd: string | undefined,
  ttl: number,
  script: Script,
) => {
  if (world.server.get(namespace, name).ok) return;
  world.scripts.set(name, script);
  world.created.push(name);
  world.server.create(taskObject(name, { ...(etcd === undefined ? {} : { etcd }), ttl }));
};

/** Lets every hanging call and every script finish, then runs time forward until nothing is scheduled. */
export const drain = (world: World) => {
  for (const script of world.scripts.values()) {
    script.admit.length = 0;
    script.execute.length = 0;
    script.cleanup.length = 0;
  }
  for (let round = 0; round < 200; round += 1) {
    for (const name of world.controller.hanging()) {
      // The hanging call returns whatever its phase would; the phase is known to the controller only.
      world.controller.resolve(namespace, name, { kind: "completed", description: "Late result" });
    }
    world.controller.runUntilIdle();
    const next = world.controller.nextTimer();
    if (next === undefined && world.controller.hanging().length === 0) return;
    world.controller.advanceAndRun(Math.max(1, (next ?? world.clock.now()) - world.clock.now()));
  }
};
