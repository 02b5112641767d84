/**
 * Cancel under random interleavings (docs/contract.md, "Cancel"): the lifecycle commands of
 * commands.ts, crashes between any two effects included, plus cancels of random tasks. After a cancel
 * is recorded on the object no handler call of that task starts, except the one in flight then; and a
 * cancel is never lost: a task cancelled while unfinished ends Failed ERR_CANCELLED, unless the call in
 * flight at the cancel ended it first.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { TaskStatus } from "../../src/api/status.ts";
import { isTerminal } from "../../src/api/status.ts";
import { cancelAnnotation, cancelledByAnnotation } from "../../src/reconcile/task-kind.ts";
import { namespace } from "../support/simulation.ts";
import { commandArbs } from "./commands.ts";
import { drain, makeWorld, metadataOf, type World } from "./world.ts";

const runs = Number(process.env.OPSTASK_PROPERTY_RUNS ?? 1_000);

interface Cancelled {
  /** Handler calls made before the cancel was recorded (those of this task may still end it). */
  readonly callsBefore: number;
  /** A call of this task was running then: its result may end the task its own way. */
  readonly inFlight: boolean;
  readonly finishedBefore: boolean;
}

type CancelWorld = World & { cancels: Map<string, Cancelled> };

class Cancel implements fc.Command<object, CancelWorld> {
  readonly name: string;
  constructor(name: string) {
    this.name = name;
  }
  check = () => true;
  run(_: object, world: CancelWorld): void {
    const stored = world.server.get(namespace, this.name);
    if (!stored.ok) return;
    const uid = String(metadataOf(stored.value).uid);
    if (world.cancels.has(uid)) return;
    const status = (stored.value.status ?? {}) as TaskStatus;
    const calls = world.controller.calls;
    world.cancels.set(uid, {
      callsBefore: calls.length,
      inFlight: calls.some((call) => call.uid === uid && call.endedAt === undefined),
      finishedBefore: isTerminal(status.state),
    });
    world.server.patch(namespace, this.name, {
      metadata: { annotations: { [cancelAnnotation]: uid, [cancelledByAnnotation]: "property" } },
    });
  }
  toString = () => `cancel(${this.name})`;
}

/** No Admit or Execute call of a cancelled task starts after its cancel was recorded. */
const checkNoCallAfterCancel = (world: CancelWorld) => {
  world.controller.calls.forEach((call, index) => {
    const cancel = world.cancels.get(call.uid);
    if (cancel === undefined || index < cancel.callsBefore || call.phase === "cleanup") return;
    throw new Error(`${call.name}: ${call.phase} call ${call.id} started after the task was cancelled`);
  });
};

/** Every cancel of an unfinished task that nothing else ended is seen: the task ends ERR_CANCELLED. */
const checkCancelKept = (world: CancelWorld) => {
  for (const [uid, cancel] of world.cancels) {
    if (cancel.finishedBefore || cancel.inFlight) continue;
    const ends = world.server.events
      .filter((event) => metadataOf(event.object).uid === uid)
      .map((event) => (event.object.status ?? {}) as TaskStatus)
      .filter((status) => isTerminal(status.state));
    const first = ends[0];
    if (first === undefined) continue;
    expect(first.lastErrors?.at(-1)?.code, `task ${uid} ended without its cancel`).toBe("ERR_CANCELLED");
  }
};

const nameArb = fc.constantFrom("a", "b", "c", "d", "e", "f");
const arbs = [
  ...commandArbs,
  nameArb.map((name) => new Cancel(name)),
  nameArb.map((name) => new Cancel(name)),
];

describe("cancel properties (memory interpreter)", () => {
  it(`no handler call after a recorded cancel, and no cancel lost (${runs} command sequences)`, () => {
    fc.assert(
      fc.property(
        fc.commands(arbs as Array<fc.Arbitrary<fc.Command<object, CancelWorld>>>, { maxCommands: 40 }),
        (commands) => {
          const world: CancelWorld = { ...makeWorld({ policy: "queue" }), cancels: new Map() };
          fc.modelRun(
            () => ({ model: {}, real: world }),
            [...commands].map((command) => ({
              check: command.check.bind(command),
              run: (model: object, real: CancelWorld) => {
                command.run(model, real);
                checkNoCallAfterCancel(real);
              },
              toString: command.toString.bind(command),
            })),
          );
          drain(world);
          checkNoCallAfterCancel(world);
          checkCancelKept(world);
        },
      ),
      { numRuns: runs },
    );
  });
});
