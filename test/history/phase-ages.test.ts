import * as Effect from "effect/Effect";
import * as Fiber from "effect/Fiber";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import type { TaskHandler } from "../../src/handlers/handler.ts";
import type { HandlerContext } from "../../src/handlers/handler-context.ts";
import { makePhaseAges, registerPhaseAgeMetrics } from "../../src/history/phase-ages.ts";
import type { Pass } from "../../src/reconcile/pass.ts";
import type { TaskKind } from "../../src/reconcile/task-kind.ts";

interface Fake {
  readonly uid: string;
}
const kind = { facts: (task: Fake) => ({ metadata: { uid: task.uid } }) } as unknown as TaskKind<Fake>;
const passAt = (state: string | undefined, type?: string, deletingSince?: number) =>
  ({
    snapshot: {
      context: {
        deletingSince,
        persisted: {
          ...(state === undefined ? {} : { state }),
          ...(type === undefined ? {} : { lastOperation: { type } }),
        },
      },
    },
  }) as unknown as Pass;
const task = (uid: string) => ({ key: `ns/${uid}`, uid, runId: "r" });

describe("how long unfinished tasks have been in their phase", () => {
  it("from the end of each pass: the phase of lastOperation, kept while it does not change", () => {
    let clock = 0;
    const ages = makePhaseAges(() => clock);
    ages.observer.passTransitions?.(task("a"), passAt("Pending"));
    clock = 5000;
    ages.observer.passTransitions?.(task("a"), passAt("InProgress", "Execution"));
    clock = 65_000;
    ages.observer.passTransitions?.(task("a"), passAt("InProgress", "Execution"));
    expect(ages.oldest(65_000)).toEqual({ admit: 0, execute: 60, cleanup: 0 });
    ages.observer.taskFinished({ type: "t", state: "Succeeded", etcd: "e", namespace: "ns" }, 1, "a");
    expect(ages.oldest(70_000)).toEqual({ admit: 0, execute: 0, cleanup: 0 });
  });

  it("a finished task is in no phase until it is deleted; then in cleanup until it is gone", () => {
    let clock = 0;
    const ages = makePhaseAges(() => clock);
    ages.observer.passTransitions?.(task("b"), passAt("Failed", "Execution"));
    expect(ages.oldest(10_000).cleanup).toBe(0);
    ages.observer.passTransitions?.(task("b"), passAt("Failed", "Cleanup", 1));
    clock = 30_000;
    expect(ages.oldest(30_000)).toEqual({ admit: 0, execute: 0, cleanup: 30 });
    ages.observer.taskGone?.("b");
    expect(ages.oldest(40_000).cleanup).toBe(0);
  });

  it("a handler call that never returns is seen from its start (its pass reports only at the end)", async () => {
    let clock = 1000;
    const ages = makePhaseAges(() => clock);
    const hanging: TaskHandler<Fake> = {
      admit: () => Effect.never,
      execute: () => Effect.never,
      cleanup: () => Effect.never,
    };
    const wrapped = ages.handlers({ ping: hanging }, kind);
    const fiber = Effect.runFork(wrapped.ping?.execute({ uid: "c" }, {} as HandlerContext) ?? Effect.void);
    await new Promise((resolve) => setTimeout(resolve, 0));
    clock = 601_000;
    expect(ages.oldest(601_000).execute).toBe(600);
    await Effect.runPromise(Fiber.interrupt(fiber));
  });

  it("is served as opstask_task_phase_seconds_max per phase, with the deadline when one is set", async () => {
    const registry = new Registry();
    const ages = makePhaseAges(() => Date.now() - 120_000);
    ages.observer.passTransitions?.(task("d"), passAt("Pending", "Admit"));
    registerPhaseAgeMetrics(registry, "EtcdOpsTask", ages, 600_000);
    const text = await registry.metrics();
    expect(text).toMatch(
      /^opstask_task_phase_seconds_max\{kind="EtcdOpsTask",phase="admit"\} 1[12]\d(\.\d+)?$/m,
    );
    expect(text).toContain('opstask_task_phase_seconds_max{kind="EtcdOpsTask",phase="execute"} 0');
    expect(text).toContain('opstask_phase_deadline_seconds{kind="EtcdOpsTask"} 600');
  });
});
