/**
 * The task board does not keep an idle controller awake: with nothing changed, the only timer it runs
 * is the 15 s keep-alive ping of its event streams; a change starts one short batching timer, which
 * ends once the batch is sent.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { startBoardServer } from "../../src/ui/board-server.ts";
import { BoardStore } from "../../src/ui/board-store.ts";

afterEach(() => {
  vi.useRealTimers();
});

describe("the task board's timers", () => {
  it("are only the 15 s ping while nothing changes", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval"] });
    const board = await startBoardServer({
      host: "127.0.0.1",
      port: 0,
      store: new BoardStore(),
      explain: () => "",
      machineSvg: async () => "<svg/>",
      machine: () => ({ states: [], edges: [] }),
    });
    try {
      expect(vi.getTimerCount()).toBe(1);
      vi.advanceTimersByTime(60_000);
      expect(vi.getTimerCount()).toBe(1);
    } finally {
      await board.stop();
    }
    expect(vi.getTimerCount()).toBe(0);
  });
});
