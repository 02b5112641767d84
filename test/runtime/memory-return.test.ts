/**
 * The collection after a busy period (src/runtime/memory-return.ts): once, when the requests stop and
 * the heap grew; never while requests keep coming, never for a heap that did not grow, and no timer
 * at all while nothing happens. Requests are real HTTP requests to a local server (the module hears
 * of them through Node's diagnostics channel); the heap's size is the test's to say.
 */
import { createServer, get, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMemoryReturn } from "../../src/runtime/memory-return.ts";

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
  });
  return { heap, collected, memory };
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
