/**
 * The pass takes the machine's microsteps through one shared inert scope (src/machine/microsteps.ts)
 * instead of xstate's `getMicrosteps`, which builds a fresh one per call. Both must give the same
 * snapshots and the same actions in the same order, on every shortest path from every situation a pass
 * can start in (the paths test/property/edges.test.ts replays), event by event.
 */
import { describe, expect, it } from "vitest";
import { type EventObject, getMicrosteps } from "xstate";
import { getShortestPaths } from "xstate/graph";
import { microstepsFor } from "../../src/machine/microsteps.ts";
import { contextOf, taskMachine } from "../../src/machine/task-machine.ts";
import { events, situations } from "../property/situations.ts";

type TaskEvent = Parameters<typeof taskMachine.transition>[1];
const isTaskEvent = (event: EventObject): event is TaskEvent => !event.type.startsWith("xstate.");

describe("the pass's microsteps", () => {
  // One scope for every situation and path, as in the controller: nothing of one call may reach the next.
  const microstepsOf = microstepsFor(taskMachine);

  for (const [name, start] of Object.entries(situations)) {
    it(`equal xstate's getMicrosteps on every shortest path from: ${name}`, () => {
      let compared = 0;
      for (const path of getShortestPaths(taskMachine, { input: start, events })) {
        let snapshot = taskMachine.resolveState({ value: "idle", context: contextOf(start) });
        for (const event of path.steps.map((step) => step.event).filter(isTaskEvent)) {
          const expected = getMicrosteps(taskMachine, snapshot, event);
          const actual = microstepsOf(snapshot, event);
          const where = `${name}, ${event.type}`;
          expect(
            actual.snapshots.map((s) => ({ value: s.value, context: s.context, status: s.status })),
            where,
          ).toEqual(expected.map(([s]) => ({ value: s.value, context: s.context, status: s.status })));
          expect(
            actual.actions.map((a) => ({ type: a.type, params: a.params })),
            where,
          ).toEqual(
            expected.flatMap(([, actions]) => actions).map((a) => ({ type: a.type, params: a.params })),
          );
          compared += actual.actions.length;
          snapshot = expected.at(-1)?.[0] ?? snapshot;
        }
      }
      expect(compared).toBeGreaterThan(0);
    });
  }
});
