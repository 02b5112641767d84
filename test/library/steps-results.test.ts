/**
 * Issue 41 point 3: steps produce results. The last step's `succeeded({ description, result })` (or the
 * handler's `completed` option, for a last step that only waits) reaches the status; `failed()` and
 * `retry()` are typed as the outcomes they are, so a wait's `check` answers them without a cast (this
 * file typechecks only so); `failed(description, { code, message })` renders its message once.
 */
import * as Effect from "effect/Effect";
import * as Schema from "effect/Schema";
import { describe, expect, it } from "vitest";
import { configMember, defineTaskKind, failed, retry, stepsHandler, type TaskStep } from "../../src/index.ts";
import { simulate } from "../../src/testing.ts";
import { type Chore, ChoreSchema, Group, Kind, Plural, Version } from "./new-kind/chore-kind.ts";

const SweepResult = Schema.Struct({ rooms: Schema.Number });
const sweepKind = defineTaskKind({
  group: Group,
  version: Version,
  kind: Kind,
  plural: Plural,
  finalizer: `${Group}/chore`,
  schema: ChoreSchema,
  ttlSeconds: (task) => task.spec.ttlSecondsAfterFinished,
  member: (task) => configMember(task.spec.config),
  status: (task) => task.status,
  result: SweepResult,
});

const chore = {
  metadata: { name: "c" },
  spec: { ttlSecondsAfterFinished: 600, config: { sweep: { room: "hall" } } },
};

const runToEnd = async (
  steps: ReadonlyArray<TaskStep<Chore>>,
  completed?: Parameters<typeof stepsHandler<Chore>>[1]["completed"],
) => {
  const handler = stepsHandler(sweepKind, {
    progress: "house.opstask.dev/sweep",
    steps,
    ...(completed === undefined ? {} : { completed }),
  });
  const sim = simulate({ kind: sweepKind, handlers: { sweep: handler, ping: handler } });
  sim.create(chore);
  for (let round = 0; round < 20; round++) {
    sim.run();
    await sim.settle();
    const next = sim.nextTimer();
    if (next === undefined || ["Succeeded", "Failed"].includes(sim.state("c") ?? "")) break;
    sim.advance(Math.max(0, next - sim.now()));
  }
  return sim;
};

describe("steps produce results", () => {
  it("the last step's succeeded({ description, result }) is the task's status", async () => {
    const sim = await runToEnd([
      { name: "Sweep", run: () => Effect.succeed(undefined) },
      {
        name: "Count",
        run: () =>
          Effect.succeed(sweepKind.succeeded({ description: "Swept 3 rooms", result: { rooms: 3 } })),
      },
    ]);
    expect(sim.state("c")).toBe("Succeeded");
    expect(sim.status("c")?.lastOperation?.description).toBe("Swept 3 rooms");
    expect((sim.object("c")?.status as { result?: unknown } | undefined)?.result).toEqual({ rooms: 3 });
  });

  it("a last step that only waits: the completed option answers the result", async () => {
    const sim = await runToEnd([{ name: "Wait", until: { check: () => Effect.succeed(true) } }], () =>
      Effect.succeed(sweepKind.succeeded({ description: "Waited", result: { rooms: 0 } })),
    );
    expect(sim.state("c")).toBe("Succeeded");
    expect(sim.status("c")?.lastOperation?.description).toBe("Waited");
    expect((sim.object("c")?.status as { result?: unknown } | undefined)?.result).toEqual({ rooms: 0 });
  });

  it("a wait's check answers failed(...) without a cast; its message is rendered once", async () => {
    let polls = 0;
    const sim = await runToEnd([
      {
        name: "Wait",
        until: {
          check: () =>
            Effect.succeed(
              polls++ === 0
                ? retry("not yet", { afterMs: 1000 })
                : failed("The room is locked", { code: "ERR_LOCKED", message: "the door is locked" }),
            ),
        },
      },
    ]);
    expect(sim.state("c")).toBe("Failed");
    const error = sim.status("c")?.lastErrors?.at(-1);
    expect(error?.code).toBe("ERR_LOCKED");
    expect(error?.description).toBe("[Operation: Execution, Code: ERR_LOCKED] message: the door is locked");
  });
});
