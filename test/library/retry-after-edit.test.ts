/**
 * Issue 14 point 6: after `retry({ afterMs })` a handler waits for the world to change; a user's edit
 * of the task (a label, a spec field) is such a change, so Execute runs again at once instead of at
 * the timer. Our own writes (the status of the retry) are not: they wake nothing. An error backoff is
 * kept whatever the edits (it guards against a failing handler in a hot loop).
 */
import { describe, expect, it } from "vitest";
import { completed, retry } from "../../src/index.ts";
import { type Simulation, simulate } from "../../src/testing.ts";
import { type Chore, choreKind } from "./new-kind/chore-kind.ts";

const chore = (name: string) => ({
  metadata: { name },
  spec: { ttlSecondsAfterFinished: 600, config: { sweep: { room: "hall" } } },
});

const executions = (sim: Simulation<Chore>) => sim.calls("a").filter((c) => c.phase === "execute");

const pollingSim = () =>
  simulate({
    kind: choreKind,
    handlers: {
      sweep: {
        execute: (_task, context) =>
          context.attempt === 1 ? retry("Waiting for the broom", { afterMs: 60_000 }) : completed("Swept"),
      },
    },
  });

describe("retry({ afterMs }) and a user's edit", () => {
  it("re-runs the handler at once after a label edit, before the timer", () => {
    const sim = pollingSim();
    sim.create(chore("a"));
    sim.run();
    expect(executions(sim)).toHaveLength(1);
    const before = sim.now();
    sim.patch("a", { metadata: { labels: { broom: "found" } } });
    sim.run();
    expect(sim.now()).toBe(before);
    expect(executions(sim)).toHaveLength(2);
    expect(sim.state("a")).toBe("Succeeded");
  });

  it("re-runs it after a spec edit too", () => {
    const sim = pollingSim();
    sim.create(chore("a"));
    sim.run();
    sim.patch("a", { spec: { house: "villa" } });
    sim.run();
    expect(executions(sim)).toHaveLength(2);
  });

  it("waits for the timer when nobody edits (our own status write is no edit)", () => {
    const sim = pollingSim();
    sim.create(chore("a"));
    sim.run();
    sim.advance(59_000);
    expect(executions(sim)).toHaveLength(1);
    sim.advance(1_000);
    expect(executions(sim)).toHaveLength(2);
  });

  it("keeps an error backoff whatever the edits", () => {
    const sim = simulate({
      kind: choreKind,
      timing: { backoffBaseMs: 10_000, backoffCapMs: 10_000 },
      handlers: {
        sweep: {
          execute: (_task, context) =>
            context.attempt === 1
              ? retry("Broom broken", { error: { code: "ERR_BROOM", message: "broken" } })
              : completed("Swept"),
        },
      },
    });
    sim.create(chore("a"));
    sim.run();
    sim.patch("a", { metadata: { labels: { broom: "fixed" } } });
    sim.run();
    expect(executions(sim)).toHaveLength(1);
    sim.advance(30_000);
    expect(executions(sim)).toHaveLength(2);
  });
});
