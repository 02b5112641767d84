/**
 * Issue 22 point 6: a handler that throws (a defect, not a result) is loud and bounded. The defect is
 * logged at ERROR with its stack, once per kind per task phase; the phase is tried again with backoff
 * until its `handlerDefectLimit`-th defect (default 5), which fails the task with ERR_HANDLER_DEFECT
 * and the stack's first line; a failed task then runs Cleanup and TTL like any other.
 */
import * as Effect from "effect/Effect";
import { describe, expect, it } from "vitest";
import { completed } from "../../src/index.ts";
import { type SimulatedHandler, simulate } from "../../src/testing.ts";
import { type Chore, choreKind } from "./new-kind/chore-kind.ts";

const chore = (name: string, ttl = 86_400) => ({
  metadata: { name },
  spec: { ttlSecondsAfterFinished: ttl, config: { sweep: { room: "hall" } } },
});

const sweepWith = (handler: SimulatedHandler<Chore>, options: { handlerDefectLimit?: number } = {}) =>
  simulate({ kind: choreKind, handlers: { sweep: handler }, ...options });

const readRoom = (task: Chore): string => {
  const rooms = (task.spec as unknown as { rooms: ReadonlyArray<string> }).rooms;
  // A bug: `rooms` is not in the spec; reading it throws a TypeError.
  return rooms[0] ?? "";
};

describe("a handler that throws fails its task after a bounded number of calls", () => {
  it("Fails after 5 calls by default, with ERR_HANDLER_DEFECT and the stack's first line", () => {
    const sim = sweepWith({ execute: (task) => completed(readRoom(task)) });
    sim.create(chore("a"));
    sim.run();
    sim.advance(20 * 60_000);
    expect(sim.calls("a").filter((call) => call.phase === "execute")).toHaveLength(5);
    expect(sim.state("a")).toBe("Failed");
    const status = sim.status("a");
    const last = status?.lastErrors?.at(-1);
    expect(last?.code).toBe("ERR_HANDLER_DEFECT");
    expect(last?.description).toContain("handler failed unexpectedly 5 times (limit 5)");
    expect(last?.description).toContain("TypeError: Cannot read properties of undefined");
    // The frame it was thrown from: where to look.
    expect(last?.description).toMatch(/\(at readRoom \(.*handler-defect\.test\.ts:\d+:\d+\)\)/);
    expect(status?.lastOperation?.description).toMatch(
      /^Handler failed unexpectedly 5 times; giving up: TypeError: Cannot read properties of undefined/,
    );
    expect(sim.events("a").map((event) => event.reason)).toEqual(["Started", "Failed"]);
  });

  it("then runs Cleanup and deletes the task after its TTL, as any failed task", () => {
    const sim = sweepWith({ execute: (task) => completed(readRoom(task)) });
    sim.create(chore("a", 60));
    sim.run();
    sim.advance(1_000);
    expect(sim.state("a")).toBe("Failed");
    sim.advance(120_000);
    expect(sim.calls("a").filter((call) => call.phase === "cleanup")).toHaveLength(1);
    expect(sim.exists("a")).toBe(false);
  });

  it("takes its limit from handlerDefectLimit", () => {
    const sim = sweepWith({ execute: (task) => completed(readRoom(task)) }, { handlerDefectLimit: 2 });
    sim.create(chore("a"));
    sim.run();
    sim.advance(60_000);
    expect(sim.calls("a").filter((call) => call.phase === "execute")).toHaveLength(2);
    expect(sim.state("a")).toBe("Failed");
  });

  it("refuses a limit that is not an integer ≥ 1, naming the option", () => {
    for (const handlerDefectLimit of [0, 1.5, -1])
      expect(() => sweepWith({}, { handlerDefectLimit })).toThrow(
        /handlerDefectLimit must be an integer ≥ 1/,
      );
  });

  it("retries defects below the limit: a handler that throws twice and then answers succeeds", () => {
    const sim = sweepWith({
      execute: (task, call) => (call.attempt <= 2 ? completed(readRoom(task)) : completed("Swept")),
    });
    sim.create(chore("a"));
    sim.run();
    sim.advance(60_000);
    expect(sim.state("a")).toBe("Succeeded");
    expect(sim.status("a")?.lastErrors?.map((error) => error.code)).toEqual([
      "ERR_HANDLER_DEFECT",
      "ERR_HANDLER_DEFECT",
    ]);
  });

  it("counts an Effect handler that dies the same way", () => {
    const sim = sweepWith({ execute: (task) => Effect.sync(() => completed(readRoom(task))) });
    sim.create(chore("a"));
    sim.run();
    sim.advance(60_000);
    expect(sim.calls("a").filter((call) => call.phase === "execute")).toHaveLength(5);
    expect(sim.state("a")).toBe("Failed");
    expect(sim.status("a")?.lastErrors?.at(-1)?.description).toContain("TypeError");
  });

  it("Rejects a task whose Admit keeps throwing, and releases one whose Cleanup does (with a warning)", () => {
    const admitting = sweepWith({ admit: (task) => completed(readRoom(task)) });
    admitting.create(chore("a"));
    admitting.run();
    admitting.advance(60_000);
    expect(admitting.state("a")).toBe("Rejected");
    expect(admitting.status("a")?.lastErrors?.at(-1)?.code).toBe("ERR_HANDLER_DEFECT");

    const cleaning = sweepWith({ cleanup: (task) => completed(readRoom(task)) });
    cleaning.create(chore("b"));
    cleaning.run();
    cleaning.delete("b");
    cleaning.run();
    cleaning.advance(60_000);
    expect(cleaning.calls("b").filter((call) => call.phase === "cleanup")).toHaveLength(5);
    expect(cleaning.exists("b")).toBe(false);
    expect(cleaning.events("b").map((event) => event.reason)).toContain("CleanupFailed");
  });
});

describe("a handler defect is logged at ERROR with its stack, once per kind per task", () => {
  it("logs one line for five calls that throw the same defect", () => {
    const sim = sweepWith({ execute: (task) => completed(readRoom(task)) });
    sim.create(chore("a"));
    sim.run();
    sim.advance(60_000);
    const errors = sim.logs("a").filter((line) => line.level === "error");
    expect(errors).toHaveLength(1);
    const [line] = errors;
    expect(line?.message).toMatch(/^handler defect: TypeError: Cannot read properties of undefined/);
    expect(line?.fields).toMatchObject({ namespace: "default", name: "a", phase: "execute" });
    expect(line?.fields.reconcileID).toEqual(expect.any(String));
    expect(String(line?.fields.stack)).toMatch(/TypeError[^\n]*\n\s+at readRoom/);
  });

  it("logs each distinct defect (another place that throws) once", () => {
    const elsewhere = (): never => {
      throw new RangeError("no broom");
    };
    const sim = sweepWith({
      execute: (task, call) => (call.attempt % 2 === 1 ? completed(readRoom(task)) : elsewhere()),
    });
    sim.create(chore("a"));
    sim.run();
    sim.advance(60_000);
    expect(sim.state("a")).toBe("Failed");
    const errors = sim.logs("a").filter((line) => line.level === "error");
    expect(errors.map((line) => line.message.split(":")[1]?.trim())).toEqual(["TypeError", "RangeError"]);
  });
});
