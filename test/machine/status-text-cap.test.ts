/**
 * Security finding 10 (issue 16): every text written to a status is bounded. Before the fix a cause
 * that echoed a 10,000-character value became a 10,117-character lastErrors entry.
 */
import { describe, expect, it } from "vitest";
import type { TaskStatus } from "../../src/api/status.ts";
import { capText, MaxStatusTextLength } from "../../src/api/text-cap.ts";
import { namespace, simulation, taskObject } from "../support/simulation.ts";

const huge = "e".repeat(10_000);

const statusOf = (server: ReturnType<typeof simulation>["server"], name: string): TaskStatus => {
  const stored = server.get(namespace, name);
  if (!stored.ok) throw new Error(`${name} is gone`);
  return stored.value.status as TaskStatus;
};

describe("status texts are capped (finding 10)", () => {
  it("a cause echoing a 10,000-character name gives a lastErrors entry of at most 1,024 characters", () => {
    const { server, controller } = simulation(() => ({
      kind: "return",
      outcome: {
        kind: "failed",
        description: "Etcd object not found",
        error: {
          code: "ERR_GET_ETCD",
          message: "etcd object not found",
          cause: `etcds.druid.gardener.cloud "${huge}" not found`,
        },
      },
    }));
    server.create(taskObject("long", { etcd: "e1" }));
    controller.runUntilIdle();
    const status = statusOf(server, "long");
    expect(status.state).toBe("Rejected");
    const [entry] = status.lastErrors ?? [];
    expect(entry?.description.length).toBeLessThanOrEqual(MaxStatusTextLength);
    expect(entry?.description).toMatch(
      /^\[Operation: Admit, Code: ERR_GET_ETCD\] message: etcd object not found, cause: etcds/,
    );
    expect(entry?.description).toMatch(/… \(\d+ more characters\)$/);
  });

  it("a 10,000-character description is capped in lastOperation", () => {
    const { server, controller } = simulation(() => ({
      kind: "return",
      outcome: { kind: "completed", description: huge },
    }));
    server.create(taskObject("wordy", { etcd: "e1" }));
    controller.runUntilIdle();
    const status = statusOf(server, "wordy");
    expect(status.state).toBe("Succeeded");
    expect(status.lastOperation?.description.length).toBeLessThanOrEqual(MaxStatusTextLength);
  });

  it("a decode error echoing a 10,000-character value is capped (ERR_INVALID_TASK)", () => {
    const { server, controller } = simulation(() => ({
      kind: "return",
      outcome: { kind: "completed", description: "done" },
    }));
    const task = taskObject("bad", { etcd: "e1" });
    server.create({
      ...task,
      spec: { ...(task.spec as object), config: { onDemandSnapshot: { type: huge } } },
    });
    controller.runUntilIdle();
    const status = statusOf(server, "bad");
    expect(status.state).toBe("Rejected");
    const [entry] = status.lastErrors ?? [];
    expect(entry?.code).toBe("ERR_INVALID_TASK");
    expect(entry?.description).toContain("spec.config.onDemandSnapshot.type");
    expect(entry?.description.length).toBeLessThanOrEqual(400);
  });

  it("capText keeps short texts, cuts long ones to the limit saying how much, never splits a pair", () => {
    expect(capText("short", 10)).toBe("short");
    const cut = capText("x".repeat(5_000), 100);
    expect(cut.length).toBeLessThanOrEqual(100);
    expect(cut).toMatch(/^x+… \(\d+ more characters\)$/);
    const emoji = capText("😀".repeat(100), 51);
    expect(emoji.length).toBeLessThanOrEqual(51);
    expect(() => encodeURIComponent(emoji)).not.toThrow();
  });
});
