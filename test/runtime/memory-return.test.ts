/**
 * The collection after a busy period (src/runtime/memory-return.ts): once, when the requests stop and
 * the heap grew; never while requests keep coming, never for a heap that did not grow, and no timer
 * at all while nothing happens. The collections while busy: at the request that finds the used heap
 * more than the headroom above the last result, later when they find mostly live data. Requests are
 * real HTTP requests to a local server (the module hears of them through Node's diagnostics channel);
 * the heap's size is the test's to say.
 */
import { createServer, get, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type MemoryReturnOptions, startMemoryReturn } from "../../src/runtime/memory-return.ts";

let server: Server;
let url: string;
beforeAll(async () => {
  server = createServer((_, response) => response.end("ok"));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

const request = () =>
  new Promise<void>((resolve, reject) =>
    get(url, (response) => {
      response.resume();
      response.on("end", resolve);
    }).on("error", reject),
  );
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const MiB = 1024 * 1024;
const quietMs = 80;

/** A memory return over a heap whose size the test sets; `collected` lists the times it collected. */
const setUp = () => {
  const heap = { bytes: 20 * MiB };
  const collected: number[] = [];
  const memory = startMemoryReturn({
    quietMs,
    heapBytes: () => heap.bytes,
    collect: () => {
      collected.push(performance.now());
      heap.bytes = 20 * MiB;
    },
    busyHeadroomBytes: 0,
  });
  return { heap, collected, memory };
};

/**
 * A busy ceiling over a used heap the test sets: each request first adds `perRequest` to it; a busy
 * collection leaves `live` plus what `keeps` says of the garbage. `at` lists the requests (1-based)
 * at which it collected, `seen` the used heap each request found.
 */
/** Held while busy over a used heap `used()` says, with a 4 MiB headroom; no collection once quiet. */
const heldMemory = (used: () => number, collectBusy: () => void, extra: MemoryReturnOptions = {}) => {
  const memory = startMemoryReturn({
    quietMs: 60_000,
    collect: () => undefined,
    heapBytes: () => 0,
    busyHeadroomBytes: 4 * MiB,
    usedBytes: used,
    collectBusy,
    ...extra,
  });
  memory.hold();
  return memory;
};

const busyRun = async (requests: number, keeps: (used: number, live: number) => number) => {
  const used = { bytes: 10 * MiB, live: 10 * MiB };
  const at: number[] = [];
  const seen: number[] = [];
  let count = 0;
  const memory = heldMemory(
    () => used.bytes,
    () => {
      at.push(count);
      used.bytes = keeps(used.bytes, used.live);
    },
  );
  try {
    for (count = 1; count <= requests; count++) {
      used.bytes += MiB;
      seen.push(used.bytes);
      await request();
    }
  } finally {
    memory.stop();
  }
  return { at, seen, memory, used };
};

describe("memory return", () => {
  it("collects once, quietMs after the last request of a period in which the heap grew", async () => {
    const { heap, collected, memory } = setUp();
    try {
      heap.bytes = 30 * MiB;
      const requests: number[] = [];
      // Requests every ~20 ms for ~300 ms: longer than quietMs, so only the end of the period counts.
      for (let i = 0; i < 15; i++) {
        requests.push(performance.now());
        await request();
        await sleep(20);
      }
      await sleep(quietMs * 3);
      expect(collected).toHaveLength(1);
      // Whenever it collected (a loaded machine may leave a gap in the requests), the last request
      // before was at least quietMs earlier.
      const at = collected[0] ?? 0;
      const before = requests.filter((time) => time <= at).at(-1) ?? 0;
      expect(at - before).toBeGreaterThanOrEqual(quietMs - 5);
      expect(memory.collections()).toBe(1);
      // Nothing more happens: no second collection.
      await sleep(quietMs * 3);
      expect(collected).toHaveLength(1);
    } finally {
      memory.stop();
    }
  });

  it("does not collect after requests when the heap did not grow by the minimum", async () => {
    const { heap, collected, memory } = setUp();
    try {
      heap.bytes = 20 * MiB + MiB / 2;
      await request();
      await request();
      await sleep(quietMs * 3);
      expect(collected).toEqual([]);
      // It grows later: the next request's quiet period collects.
      heap.bytes = 24 * MiB;
      await request();
      await sleep(quietMs * 3);
      expect(collected).toHaveLength(1);
    } finally {
      memory.stop();
    }
  });

  it("arms no timer without requests, and none after stop", async () => {
    const { heap, collected, memory } = setUp();
    heap.bytes = 40 * MiB;
    await sleep(quietMs * 3);
    expect(collected).toEqual([]);
    memory.stop();
    await request();
    await sleep(quietMs * 3);
    expect(collected).toEqual([]);
  });

  it("collects while busy at the request that finds the used heap more than the headroom above the last result", async () => {
    // All garbage: each collection leaves the live 10 MiB.
    const { at, seen, memory } = await busyRun(12, (_, live) => live);
    expect(at).toEqual([5, 10]);
    expect(memory.busyCollections()).toBe(2);
    // What the requests found never went above the live size plus the headroom by more than a request's growth.
    expect(Math.max(...seen)).toBe(15 * MiB);
  });

  it("lets the next collection wait for twice the growth, up to 8 MiB, when one finds mostly live data", async () => {
    // Each collection frees only 1 MiB (a cache filling): the allowance goes 4 -> 8 -> 8 MiB.
    const { at } = await busyRun(30, (used) => used - MiB);
    // Request 5 finds 15 MiB (> 10 + 4) and leaves 14, allowed 8; request 14 finds 23 (> 14 + 8) and
    // leaves 22, allowed still 8; request 23 finds 31 (> 22 + 8).
    expect(at).toEqual([5, 14, 23]);
    // Once one frees most of what grew, the allowance is back to 4 MiB.
    const back = await busyRun(20, (used, live) => (used > 20 * MiB ? live : used - MiB));
    // 5 (15 -> 14, allowed 8), 14 (23 -> 10: mostly garbage, allowed 4 again), 19 (15 > 10 + 4).
    expect(back.at).toEqual([5, 14, 19]);
  });

  it("takes a drop in the used heap (V8's own collection) as the new base", async () => {
    const used = { bytes: 20 * MiB };
    const memory = heldMemory(
      () => used.bytes,
      () => {
        used.bytes = 12 * MiB;
      },
    );
    try {
      used.bytes = 12 * MiB; // V8 collected: 12 is the base now
      await request();
      used.bytes = 23 * MiB; // below 20 + 4, but above 12 + 4
      await request();
      expect(memory.busyCollections()).toBe(1);
      // Left 12. V8 collects again, to 14 (above the last result, but 2 MiB below the last request's 16):
      // 14 is the base, so 17.5 does not collect and 18.5 does.
      for (const [mib, collections] of [
        [16, 1],
        [14, 1],
        [17.5, 1],
        [18.5, 2],
      ] as const) {
        used.bytes = mib * MiB;
        await request();
        expect({ mib, collections: memory.busyCollections() }).toEqual({ mib, collections });
      }
    } finally {
      memory.stop();
    }
  });

  it("does not collect while busy without a busy collection, with no headroom, or before hold()", async () => {
    const off = heldMemory(
      () => 100 * MiB,
      () => undefined,
      { busyHeadroomBytes: 0 },
    );
    const none = startMemoryReturn({ quietMs: 60_000, collect: () => undefined, heapBytes: () => 0 });
    const used = { bytes: 10 * MiB };
    const notYet = startMemoryReturn({
      quietMs: 60_000,
      collect: () => undefined,
      heapBytes: () => 0,
      busyHeadroomBytes: 4 * MiB,
      usedBytes: () => used.bytes,
      collectBusy: () => undefined,
    });
    none.hold();
    try {
      used.bytes = 100 * MiB;
      await request();
      await request();
      expect({
        off: off.busyCollections(),
        none: none.busyCollections(),
        notYet: notYet.busyCollections(),
      }).toEqual({ off: 0, none: 0, notYet: 0 });
      // Held from now on, from the heap it holds now: the request that finds 4 MiB more collects.
      notYet.hold();
      await request();
      expect(notYet.busyCollections()).toBe(0);
      used.bytes = 105 * MiB;
      await request();
      expect(notYet.busyCollections()).toBe(1);
    } finally {
      off.stop();
      none.stop();
      notYet.stop();
    }
  });

  it("uses the exposed gc only with V8's reducer off, and is off without gc", () => {
    const exposed = Reflect.get(globalThis, "gc");
    try {
      Reflect.set(globalThis, "gc", () => undefined);
      const bothOn = startMemoryReturn({ reducerOff: false });
      const ours = startMemoryReturn({ reducerOff: true });
      expect({ bothOn: bothOn.active, ours: ours.active }).toEqual({ bothOn: false, ours: true });
      bothOn.stop();
      ours.stop();
      Reflect.deleteProperty(globalThis, "gc");
      const noGc = startMemoryReturn({ reducerOff: true });
      expect(noGc.active).toBe(false);
      noGc.stop();
      // This process runs without --no-memory-reducer: by default, off.
      Reflect.set(globalThis, "gc", () => undefined);
      expect(process.execArgv).not.toContain("--no-memory-reducer");
      const byDefault = startMemoryReturn();
      expect(byDefault.active).toBe(false);
      byDefault.stop();
    } finally {
      if (exposed === undefined) Reflect.deleteProperty(globalThis, "gc");
      else Reflect.set(globalThis, "gc", exposed);
    }
  });
});
