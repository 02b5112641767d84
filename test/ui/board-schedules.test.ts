/** The board's schedule list stays bounded: schedules beyond its limit, long text, long lists. */
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../src/kube/object.ts";
import { BoardSchedules } from "../../src/ui/board-schedules.ts";

const schedule = (name: string, extra: { spec?: object; status?: object } = {}): KubeObject => ({
  metadata: { name, namespace: "ns", uid: `uid-${name}`, resourceVersion: "1" },
  spec: { taskKind: { kind: "EtcdOpsTask" }, schedule: "0 3 * * *", ...extra.spec },
  status: { nextRunTime: "2026-11-27T03:00:00Z", ...extra.status },
});

describe("BoardSchedules", () => {
  it("keeps at most maxSchedules, forgetting the one updated longest ago, and tells viewers", () => {
    const board = new BoardSchedules(3);
    const changed: string[] = [];
    board.onChange((key) => changed.push(key));
    for (const name of ["a", "b", "c"]) board.observe(`ns/${name}`, schedule(name), 0);
    board.observe("ns/a", schedule("a", { status: { nextRunTime: "2026-11-28T03:00:00Z" } }), 1);
    board.observe("ns/d", schedule("d"), 2);
    expect(board.summaries().map((each) => each.name)).toEqual(["c", "a", "d"]);
    expect(board.summary("ns/b")).toBeUndefined();
    expect(changed).toEqual(["ns/a", "ns/b", "ns/c", "ns/a", "ns/b", "ns/d"]);
    board.observe("ns/c", undefined, 3);
    expect(board.size).toBe(2);
    expect(changed.at(-1)).toBe("ns/c");
  });

  it("cuts long text and long lists, and shows no next run while suspended", () => {
    const board = new BoardSchedules(10, 8);
    board.observe(
      "ns/long",
      schedule("long", {
        spec: { timeZone: "x".repeat(100), suspend: true },
        status: {
          active: Array.from({ length: 50 }, (_, i) => ({ name: `run-${i}`, scheduledTime: "t" })),
          skippedRuns: Array.from({ length: 10 }, () => ({
            scheduledTime: "t",
            reason: "Superseded",
            message: "m",
          })),
        },
      }),
      0,
    );
    const summary = board.summary("ns/long");
    expect(summary?.timeZone).toBe(`${"x".repeat(8)}…`);
    expect(summary?.active).toHaveLength(10);
    expect(summary?.skippedRuns).toHaveLength(5);
    expect(summary?.suspended).toBe(true);
    expect(summary?.nextRunTime).toBe("");
  });
});
