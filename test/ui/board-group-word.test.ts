/**
 * Issue 27 point 3: the task board of a library kind labels a task's admission group with the kind's
 * own word (a Chore's `house`), where it said `etcd` for every kind.
 */
import { afterAll, describe, expect, it } from "vitest";
import { boardScript } from "../../src/ui/page/board-script.ts";
import { startTaskBoard, type TaskBoard } from "../../src/ui/task-board.ts";
import { type Chore, choreKind } from "../library/new-kind/chore-kind.ts";

describe("the task board's words for a library kind", () => {
  let board: TaskBoard<Chore> | undefined;
  afterAll(async () => {
    await board?.stop();
  });

  it("labels the task's group with the kind's word for it", async () => {
    board = await startTaskBoard({ address: ":0", kind: choreKind });
    board.store.observeFacts(
      {
        metadata: {
          name: "sweep-1",
          namespace: "ns",
          uid: "u-1",
          resourceVersion: "1",
          creationTimestamp: "2026-11-24T11:59:00Z",
        },
        ttlSeconds: 600,
        group: "villa",
        member: "sweep",
        status: {},
      },
      Date.now(),
    );
    const response = await fetch(`${board.server.origin}/api/tasks/ns/sweep-1`, {
      headers: { authorization: `Bearer ${board.server.token}` },
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ name: "sweep-1", group: "villa", groupWord: "house" });
    // The page labels the group with that word; no kind's word is written into it.
    expect(boardScript).toContain('[d.groupWord || "group", d.group]');
    expect(boardScript).not.toMatch(/\["etcd"/);
  });
});
