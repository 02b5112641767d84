/**
 * Issue 41 point 5: what an operator's own simulate() test reads and how it moves: `sim.result` and
 * `sim.conditions` of its kind, `sim.step()` (run, deliver, then the next timer only), and a call
 * that takes no simulated time, so a crash then a jump of the clock does not let a restarted call
 * read the time after the jump.
 */
import * as Schema from "effect/Schema";
import { describe, expect, it } from "vitest";
import { withDefault } from "../../src/crd.ts";
import { configUnion, defineTaskKind, memberHandlers, promiseHandler, retry } from "../../src/index.ts";
import { simulate } from "../../src/testing.ts";

const PingResult = Schema.Struct({ answeredAt: Schema.Number });
const pingKind = defineTaskKind({
  group: "tests.opstask.dev",
  version: "v1",
  kind: "Ping",
  plural: "pings",
  spec: Schema.Struct({
    ttlSecondsAfterFinished: Schema.Number.pipe(withDefault(600)),
    config: configUnion({ ping: Schema.Struct({ deadlineMs: Schema.Number }) }),
  }),
  result: PingResult,
});

/**
 * Execute waits for a deadline measured from the task's creation, with the clock it is given: past
 * it the task fails; before it, it succeeds on the second call. Asynchronous, as real handlers are.
 */
const handlersFrom = (createdAt: number, seen: Array<number>) =>
  memberHandlers((task: typeof pingKind.schema.Type) => task.spec.config, {
    ping: promiseHandler({
      execute: async (_task, { config, attempt, clock }) => {
        await Promise.resolve();
        const now = clock?.() ?? Number.NaN;
        seen.push(now);
        if (now - createdAt > config.deadlineMs)
          return retry("Past the deadline", { error: { code: "ERR_LATE", message: `at ${now}` } });
        return attempt < 2
          ? retry("Not yet", { afterMs: 1_000 })
          : pingKind.succeeded({ description: "Answered", result: { answeredAt: now } });
      },
    }),
  });

describe("an operator's simulate() test", () => {
  it("reads the result and the conditions its kind writes", async () => {
    const start = Date.UTC(2026, 0, 1);
    const sim = simulate({ kind: pingKind, handlers: handlersFrom(start, []), startAt: start });
    try {
      sim.create({ metadata: { name: "p" }, spec: { config: { ping: { deadlineMs: 60_000 } } } });
      for (let i = 0; i < 20 && sim.state("p") !== "Succeeded"; i++) await sim.step();
      expect(sim.state("p")).toBe("Succeeded");
      expect(sim.result("p")).toEqual({ answeredAt: start + 1_000 });
      expect(sim.conditions("p")?.map(({ type, status }) => ({ type, status }))).toEqual([
        { type: "Succeeded", status: "True" },
        { type: "Failed", status: "False" },
      ]);
    } finally {
      await sim.dispose();
    }
  });

  it("steps: runs and delivers what is ready, then moves the clock to the next timer only", async () => {
    const start = Date.UTC(2026, 0, 1);
    const sim = simulate({ kind: pingKind, handlers: handlersFrom(start, []), startAt: start });
    try {
      sim.create({ metadata: { name: "p" }, spec: { config: { ping: { deadlineMs: 60_000 } } } });
      expect(await sim.step()).toBe("ran");
      // The first call's retry was delivered: its 1 s timer is the next.
      expect(sim.hanging()).toEqual([]);
      expect(sim.nextTimer()).toBe(start + 1_000);
      expect(await sim.step()).toBe("advanced");
      expect(sim.now()).toBe(start + 1_000);
      expect(sim.state("p")).toBe("Succeeded");
      // Only the TTL is left; past it the task is gone and nothing is left to do.
      expect(await sim.step()).toBe("advanced");
      expect(sim.exists("p")).toBe(false);
      expect(await sim.step()).toBe("idle");
    } finally {
      await sim.dispose();
    }
  });

  it("gives a call the instant it was made: a restarted call after crash() does not read the clock after advance()'s jump", async () => {
    const start = Date.UTC(2026, 0, 1);
    const seen: Array<number> = [];
    const sim = simulate({ kind: pingKind, handlers: handlersFrom(start, seen), startAt: start });
    try {
      sim.create({ metadata: { name: "p" }, spec: { config: { ping: { deadlineMs: 60_000 } } } });
      sim.crash();
      // The restarted controller calls Execute at once; the test then jumps past the deadline.
      sim.advance(600_000);
      await sim.settle();
      expect(seen[0]).toBe(start);
      expect(sim.status("p")?.lastErrors ?? []).toEqual([]);
    } finally {
      await sim.dispose();
    }
  });
});
