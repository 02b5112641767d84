/**
 * Issue 27 point 3: what the lifecycle writes on a library kind's task names that kind, never
 * EtcdOpsTask. A failed TTL deletion of a Chore is `ERR_DELETE_CHORE` ("failed to delete Chore
 * resource", the API error naming `chores`), where the flagship keeps druid's
 * `ERR_DELETE_ETCD_OPS_TASK` (test/machine/contract.test.ts).
 */
import { describe, expect, it } from "vitest";
import { completed } from "../../src/index.ts";
import { simulate } from "../../src/testing.ts";
import { choreKind } from "./new-kind/chore-kind.ts";

describe("the lifecycle's texts on a library kind's task", () => {
  it("a failed deletion names the kind in its code, message and cause", () => {
    const sim = simulate({ kind: choreKind, handlers: { sweep: { execute: () => completed("Swept") } } });
    sim.create({
      metadata: { name: "a" },
      spec: { house: "villa", ttlSecondsAfterFinished: 1, config: { sweep: { room: "hall" } } },
    });
    sim.run();
    expect(sim.state("a")).toBe("Succeeded");
    sim.controller.failNextDelete();
    sim.advance(1_000);
    const last = sim.status("a")?.lastErrors?.at(-1);
    expect(last).toMatchObject({
      code: "ERR_DELETE_CHORE",
      description:
        "[Operation: Cleanup, Code: ERR_DELETE_CHORE] message: failed to delete Chore resource, cause: the server is currently unable to handle the request (delete chores)",
    });
    const written = sim
      .writes("a")
      .map((write) => JSON.stringify(write))
      .join("\n");
    expect(written).not.toMatch(/etcd|druid/i);
    sim.advance(1_000);
    expect(sim.exists("a")).toBe(false);
  });
});
