/**
 * What can happen to the world, as fast-check commands: tasks created (several per etcd, some at the
 * same instant), handler outcomes (scripted per task, including hangs and throws), clock advances,
 * user deletes, label edits, foreign finalizers, conflicting writes, failed status writes, a watch
 * that lags behind (with a resync meanwhile), and controller crashes between any two effects.
 */
import fc from "fast-check";
import type { Behaviour } from "../../src/interpreters/memory/controller.ts";
import type { Phase, PhaseOutcome } from "../../src/machine/types.ts";
import { namespace } from "../support/simulation.ts";
import { createTask, finalizersOf, foreignFinalizer, type Script, type World } from "./world.ts";

type Command = fc.Command<object, World>;

const names = ["a", "b", "c", "d", "e", "f"] as const;
const etcds = ["e1", "e2", undefined] as const;

const error = {
  code: "ERR_EXECUTE_HTTP_REQUEST",
  message: "failed to execute HTTP request",
  cause: "connection refused",
};

const behaviourArb = (phase: Phase): fc.Arbitrary<Behaviour> =>
  fc.oneof(
    {
      weight: 4,
      arbitrary: fc.constant<Behaviour>({
        kind: "return",
        outcome: { kind: "completed", description: `${phase} done` },
      }),
    },
    {
      weight: 2,
      arbitrary: fc.constant<Behaviour>({
        kind: "return",
        outcome: {
          kind: "failed",
          description: `${phase} failed`,
          error: { ...error, code: "ERR_CREATE_SNAPSHOT" },
        },
      }),
    },
    {
      weight: 3,
      arbitrary: fc.constant<Behaviour>({
        kind: "return",
        outcome: { kind: "retry", description: "Failed to execute HTTP request", error },
      }),
    },
    {
      weight: 1,
      arbitrary: fc.constant<Behaviour>({
        kind: "return",
        outcome: { kind: "retry", description: "Still running", afterMs: 1_000 },
      }),
    },
    { weight: 1, arbitrary: fc.constant<Behaviour>({ kind: "hang" }) },
    { weight: 1, arbitrary: fc.constant<Behaviour>({ kind: "throw", message: "boom" }) },
  );

const scriptArb: fc.Arbitrary<Script> = fc.record({
  admit: fc.array(behaviourArb("admit"), { maxLength: 2 }),
  execute: fc.oneof(
    { weight: 9, arbitrary: fc.array(behaviourArb("execute"), { maxLength: 3 }) },
    // A long streak of transient errors: more than lastErrors can hold.
    {
      weight: 1,
      arbitrary: fc.constant(
        Array.from(
          { length: 12 },
          (): Behaviour => ({
            kind: "return",
            outcome: { kind: "retry", description: "Failed to execute HTTP request", error },
          }),
        ),
      ),
    },
  ),
  cleanup: fc.array(behaviourArb("cleanup"), { maxLength: 2 }),
});

const taskArb = fc.record({
  name: fc.constantFrom(...names),
  etcd: fc.constantFrom(...etcds),
  ttl: fc.constantFrom(1, 2, 10),
  script: scriptArb,
});

const describeBehaviour = (b: Behaviour): string =>
  b.kind === "return"
    ? b.outcome.kind + (b.outcome.kind === "retry" && b.outcome.error === undefined ? "(poll)" : "")
    : b.kind;
const describeScript = (script: Script): string =>
  `[${(["admit", "execute", "cleanup"] as const).map((phase) => `${phase}:${script[phase].map(describeBehaviour).join("+") || "ok"}`).join(" ")}]`;

class CreateTasks implements Command {
  readonly tasks: ReadonlyArray<{ name: string; etcd: string | undefined; ttl: number; script: Script }>;
  constructor(tasks: CreateTasks["tasks"]) {
    this.tasks = tasks;
  }
  check = () => true;
  run(_: object, world: World): void {
    // All of them in the same instant: "simultaneous" creation.
    for (const task of this.tasks)
      createTask(world, task.name, task.etcd, task.ttl, structuredClone(task.script));
  }
  toString = () =>
    `create(${this.tasks.map((t) => `${t.name}@${String(t.etcd)}/ttl${t.ttl} ${describeScript(t.script)}`).join(", ")})`;
}

class RunController implements Command {
  check = () => true;
  run(_: object, world: World): void {
    world.controller.runUntilIdle();
  }
  toString = () => "run";
}

class Advance implements Command {
  readonly ms: number;
  constructor(ms: number) {
    this.ms = ms;
  }
  check = () => true;
  run(_: object, world: World): void {
    world.controller.advanceAndRun(this.ms);
  }
  toString = () => `advance(${this.ms}ms)`;
}

class UserDelete implements Command {
  readonly name: string;
  constructor(name: string) {
    this.name = name;
  }
  check = () => true;
  run(_: object, world: World): void {
    world.server.delete(namespace, this.name);
  }
  toString = () => `delete(${this.name})`;
}

class LabelEdit implements Command {
  readonly name: string;
  constructor(name: string) {
    this.name = name;
  }
  check = () => true;
  run(_: object, world: World): void {
    world.server.patch(namespace, this.name, {
      metadata: { labels: { touched: String(world.clock.now()) } },
    });
  }
  toString = () => `label(${this.name})`;
}

class ToggleForeignFinalizer implements Command {
  readonly name: string;
  constructor(name: string) {
    this.name = name;
  }
  check = () => true;
  run(_: object, world: World): void {
    const stored = world.server.get(namespace, this.name);
    if (!stored.ok) return;
    const finalizers = finalizersOf(stored.value);
    const meta = stored.value.metadata as { resourceVersion?: string; deletionTimestamp?: string };
    if (finalizers.includes(foreignFinalizer)) {
      const result = world.server.patch(namespace, this.name, {
        metadata: {
          resourceVersion: meta.resourceVersion ?? null,
          finalizers: finalizers.filter((f) => f !== foreignFinalizer),
        },
      });
      if (result.ok) world.foreign.delete(this.name);
    } else if (meta.deletionTimestamp === undefined) {
      const result = world.server.patch(namespace, this.name, {
        metadata: {
          resourceVersion: meta.resourceVersion ?? null,
          finalizers: [...finalizers, foreignFinalizer],
        },
      });
      if (result.ok) world.foreign.add(this.name);
    }
  }
  toString = () => `foreignFinalizer(${this.name})`;
}

class Crash implements Command {
  readonly afterEffects: number;
  constructor(afterEffects: number) {
    this.afterEffects = afterEffects;
  }
  check = () => true;
  run(_: object, world: World): void {
    world.controller.crashAfter(this.afterEffects);
    world.controller.runUntilIdle();
  }
  toString = () => `crashAfter(${this.afterEffects} effects)`;
}

/**
 * The watch falls behind while the controller works (its copy goes stale: a task whose last finalizer
 * it removed is still in it), a resync wakes every task, and then the watch catches up.
 */
class LaggingWatch implements Command {
  readonly resync: boolean;
  constructor(resync: boolean) {
    this.resync = resync;
  }
  check = () => true;
  run(_: object, world: World): void {
    world.controller.lagWatch();
    world.controller.runUntilIdle();
    if (this.resync) {
      world.resynced.add(world.controller.epoch);
      world.controller.resync();
    }
    world.controller.runUntilIdle();
    world.controller.catchUp();
    world.controller.runUntilIdle();
  }
  toString = () => `laggingWatch(${this.resync ? "resync" : "no resync"})`;
}

/**
 * The user deletes a task and the watch falls behind right after telling the controller: its Cleanup
 * removes our finalizer while the copy still holds the task, and a resync then wakes every task.
 */
class DeleteWhileWatchLags implements Command {
  readonly name: string;
  constructor(name: string) {
    this.name = name;
  }
  check = () => true;
  run(_: object, world: World): void {
    world.server.delete(namespace, this.name);
    world.controller.catchUp();
    new LaggingWatch(true).run({}, world);
  }
  toString = () => `deleteWhileWatchLags(${this.name})`;
}

class FailNextStatusWrite implements Command {
  check = () => true;
  run(_: object, world: World): void {
    world.controller.failNextStatusWrite();
  }
  toString = () => "failNextStatusWrite";
}

class FailNextDelete implements Command {
  check = () => true;
  run(_: object, world: World): void {
    world.controller.failNextDelete();
  }
  toString = () => "failNextDelete";
}

class ConcurrentEdit implements Command {
  check = () => true;
  run(_: object, world: World): void {
    world.controller.editConcurrentlyBeforeNextMetadataWrite();
  }
  toString = () => "concurrentEditBeforeNextMetadataWrite";
}

class ResolveHanging implements Command {
  readonly pick: number;
  readonly outcome: PhaseOutcome;
  constructor(pick: number, outcome: PhaseOutcome) {
    this.pick = pick;
    this.outcome = outcome;
  }
  check = () => true;
  run(_: object, world: World): void {
    const hanging = world.controller.hanging();
    const name = hanging[this.pick % Math.max(1, hanging.length)];
    if (name !== undefined) world.controller.resolve(namespace, name, this.outcome);
  }
  toString = () => `resolveHanging(#${this.pick}, ${this.outcome.kind})`;
}

/**
 * The user deletes a task whose handler call hangs and creates a new task for the same etcd: the new
 * one must not be admitted while that call runs (issue 16, finding 12).
 */
class RivalOfHanging implements Command {
  readonly pick: number;
  constructor(pick: number) {
    this.pick = pick;
  }
  check = () => true;
  run(_: object, world: World): void {
    const hanging = world.controller.hanging();
    const busy = hanging[this.pick % Math.max(1, hanging.length)];
    const group = [...world.controller.calls].reverse().find((call) => call.name === busy)?.group;
    const name = names.find((candidate) => !world.server.get(namespace, candidate).ok);
    if (group === undefined || name === undefined) return;
    const etcd = group.slice(group.indexOf("/") + 1);
    if (busy !== undefined) world.server.delete(namespace, busy);
    world.controller.runUntilIdle();
    createTask(world, name, etcd, 1, { admit: [], execute: [], cleanup: [] });
    world.controller.runUntilIdle();
  }
  toString = () => `deleteHangingAndCreateRival(#${this.pick})`;
}

/** A user's delete or label edit lands between a handler's return and the status write of its result. */
class BetweenReturnAndWrite implements Command {
  readonly action: "delete" | "label";
  constructor(action: "delete" | "label") {
    this.action = action;
  }
  check = () => true;
  run(_: object, world: World): void {
    world.controller.beforeNextResultWrite((ns, name) => {
      if (this.action === "delete") world.server.delete(ns, name);
      else world.server.patch(ns, name, { metadata: { labels: { touched: String(world.clock.now()) } } });
    });
  }
  toString = () => `${this.action}BeforeNextResultWrite`;
}

const nameArb = fc.constantFrom(...names);

export const commandArbs = [
  fc.array(taskArb, { minLength: 1, maxLength: 3 }).map((tasks) => new CreateTasks(tasks)),
  fc.constant(new RunController()),
  fc.constantFrom(5, 50, 500, 1_500, 6_000, 11_000).map((ms) => new Advance(ms)),
  nameArb.map((name) => new UserDelete(name)),
  nameArb.map((name) => new LabelEdit(name)),
  nameArb.map((name) => new ToggleForeignFinalizer(name)),
  fc.nat({ max: 8 }).map((n) => new Crash(n)),
  fc.constant(new FailNextStatusWrite()),
  fc.boolean().map((resync) => new LaggingWatch(resync)),
  nameArb.map((name) => new DeleteWhileWatchLags(name)),
  fc.constant(new FailNextDelete()),
  fc.constant(new ConcurrentEdit()),
  fc.constantFrom<"delete" | "label">("delete", "label").map((action) => new BetweenReturnAndWrite(action)),
  fc.nat({ max: 3 }).map((pick) => new RivalOfHanging(pick)),
  fc
    .tuple(
      fc.nat({ max: 3 }),
      fc.constantFrom<PhaseOutcome>(
        { kind: "completed", description: "Late result" },
        { kind: "failed", description: "Late failure", error: { ...error, code: "ERR_CREATE_SNAPSHOT" } },
        { kind: "retry", description: "Late retry", error },
      ),
    )
    .map(([pick, outcome]) => new ResolveHanging(pick, outcome)),
];
