/**
 * Issue 14 point 2: every handler phase gets a context besides its task (attempt, a logger with the
 * task's keys, an object reader, an Event recorder, the Kubernetes client, an abort signal), and a
 * member's handler gets its own config member, typed. Shown here under simulate(), whose reader and
 * recorder are the memory ones; test/integration/handler-context.test.ts shows it on a real apiserver.
 */
import * as Effect from "effect/Effect";
import { describe, expect, it } from "vitest";
import {
  completed,
  type HandlerContext,
  memberHandlers,
  type PhaseOutcome,
  promiseHandler,
  retry,
} from "../../src/index.ts";
import { type CallContext, hang, simulate } from "../../src/testing.ts";
import { type Chore, choreKind } from "./new-kind/chore-kind.ts";

const chore = (name: string, config: Readonly<Record<string, unknown>>) => ({
  metadata: { name },
  spec: { ttlSecondsAfterFinished: 600, config },
});

const configMaps = { group: "", version: "v1", plural: "configmaps" } as const;

describe("the handler context under simulate()", () => {
  it("counts attempts per phase from 1, through error backoffs and polls", () => {
    const seen: Array<[string, number]> = [];
    const sim = simulate({
      kind: choreKind,
      handlers: {
        sweep: {
          admit: (_task, context) => {
            seen.push([context.phase, context.attempt]);
            return completed("Admitted");
          },
          execute: (_task, context) => {
            seen.push([context.phase, context.attempt]);
            if (context.attempt === 1)
              return retry("Broom missing", { error: { code: "ERR_BROOM", message: "no broom" } });
            if (context.attempt === 2) return retry("Still sweeping", { afterMs: 1_000 });
            return completed("Swept");
          },
        },
      },
    });
    sim.create(chore("a", { sweep: { room: "hall" } }));
    sim.run();
    sim.advance(60_000);
    expect(sim.state("a")).toBe("Succeeded");
    expect(seen).toEqual([
      ["admit", 1],
      ["execute", 1],
      ["execute", 2],
      ["execute", 3],
    ]);
  });

  it("logs with the task's keys (namespace, name, uid, reconcileID, phase)", () => {
    const sim = simulate({
      kind: choreKind,
      handlers: {
        sweep: {
          execute: (_task, context) => {
            context.log.info("sweeping", { room: "hall" });
            return completed("Swept");
          },
        },
      },
    });
    sim.create(chore("a", { sweep: { room: "hall" } }));
    sim.run();
    const uid = sim.object("a")?.metadata;
    const [line] = sim.logs("a");
    expect(line).toMatchObject({
      level: "info",
      message: "sweeping",
      fields: {
        room: "hall",
        namespace: "default",
        name: "a",
        uid: (uid as { uid: string }).uid,
        phase: "execute",
      },
    });
    expect(line?.fields.reconcileID).toMatch(/^run-\d+$/);
  });

  it("reads other objects of the simulated cluster, and answers undefined for a missing one", async () => {
    const read: unknown[] = [];
    const sim = simulate({
      kind: choreKind,
      objects: [
        {
          resource: configMaps,
          object: { metadata: { namespace: "default", name: "rooms" }, data: { hall: "dusty" } },
        },
      ],
      handlers: {
        sweep: promiseHandler<Chore>({
          execute: async (_task, context) => {
            read.push(await context.objects.get(configMaps, "default", "rooms"));
            read.push(await context.objects.get(configMaps, "default", "attic"));
            return completed("Swept");
          },
        }),
      },
    });
    sim.create(chore("a", { sweep: { room: "hall" } }));
    sim.run();
    await sim.settle();
    expect(sim.state("a")).toBe("Succeeded");
    expect(read).toEqual([
      { metadata: { namespace: "default", name: "rooms" }, data: { hall: "dusty" } },
      undefined,
    ]);
  });

  it("records Events on the task", () => {
    const sim = simulate({
      kind: choreKind,
      handlers: {
        sweep: {
          execute: (_task, context) => {
            context.events.record("Normal", "HallSwept", "the hall is clean");
            return completed("Swept");
          },
        },
      },
    });
    sim.create(chore("a", { sweep: { room: "hall" } }));
    sim.run();
    expect(sim.events("a")).toContainEqual(
      expect.objectContaining({ eventType: "Normal", reason: "HallSwept", note: "the hall is clean" }),
    );
  });

  it("aborts the signal when the task is deleted during the call, and on a crash", () => {
    const contexts = new Map<string, CallContext>();
    const sim = simulate({
      kind: choreKind,
      handlers: {
        sweep: {
          execute: (task, context) => {
            contexts.set(task.metadata.name, context);
            return hang;
          },
        },
      },
    });
    sim.create(chore("deleted", { sweep: { room: "hall" } }));
    sim.create(chore("crashed", { sweep: { room: "attic" } }));
    sim.run();
    expect(contexts.get("deleted")?.signal.aborted).toBe(false);
    expect(contexts.get("crashed")?.signal.aborted).toBe(false);
    sim.delete("deleted");
    sim.run();
    expect(contexts.get("deleted")?.signal.aborted).toBe(true);
    expect(contexts.get("crashed")?.signal.aborted).toBe(false);
    sim.crash();
    expect(contexts.get("crashed")?.signal.aborted).toBe(true);
  });

  it("has no Kubernetes client in simulation", () => {
    let context: HandlerContext | undefined;
    const sim = simulate({
      kind: choreKind,
      handlers: {
        sweep: {
          execute: (_task, call) => {
            context = call;
            return completed("Swept");
          },
        },
      },
    });
    sim.create(chore("a", { sweep: { room: "hall" } }));
    sim.run();
    expect(context).toBeDefined();
    expect(context?.kube).toBeUndefined();
  });

  it("gives each member's handler its own config member, typed (memberHandlers)", async () => {
    const handlers = memberHandlers((task: Chore) => task.spec.config, {
      // `config.room` and `config.target` type-check only because each handler sees its own member.
      sweep: promiseHandler({ execute: (_task, { config }) => completed(`Swept the ${config.room}`) }),
      ping: {
        admit: () => Effect.succeed(completed("Target named")),
        execute: (_task, { config, attempt }): Effect.Effect<PhaseOutcome> =>
          Effect.succeed(completed(`Pinged ${config.target} (attempt ${attempt})`)),
        cleanup: () => Effect.succeed(completed("Nothing to clean")),
      },
    });
    const sim = simulate({ kind: choreKind, handlers });
    sim.create(chore("s", { sweep: { room: "hall" } }));
    sim.create(chore("p", { ping: { target: "db" } }));
    sim.run();
    await sim.settle();
    expect(sim.status("s")?.lastOperation?.description).toBe("Swept the hall");
    expect(sim.status("p")?.lastOperation?.description).toBe("Pinged db (attempt 1)");
  });
});
