import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { RelayHistory } from "../../src/inspect/relay.ts";
import {
  type StatelyInspector,
  sessionIdOf,
  startStatelyInspector,
} from "../../src/inspect/stately-inspector.ts";
import { driveLifecycle, newTask } from "./lifecycle.ts";

interface Message {
  readonly type: string;
  readonly sessionId: string;
  readonly rootId?: string;
  readonly name?: string;
  readonly definition?: string;
  readonly event?: { readonly type: string; readonly phase?: string; readonly steps?: string[] };
  readonly snapshot?: {
    readonly value: unknown;
    readonly context: { readonly state?: string; readonly [key: string]: unknown };
  };
}

/** A WebSocket client of the relay (Node's global WebSocket) that keeps what it receives. */
const listen = async (url: string) => {
  const messages: Message[] = [];
  const socket = new WebSocket(url);
  socket.addEventListener("message", (event) => {
    messages.push(JSON.parse(String(event.data)) as Message);
  });
  await new Promise<void>((resolve, reject) => {
    socket.addEventListener("open", () => resolve(), { once: true });
    socket.addEventListener("error", () => reject(new Error(`cannot connect to ${url}`)), { once: true });
  });
  const closed = new Promise<void>((resolve) => socket.addEventListener("close", () => resolve()));
  return { messages, socket, closed };
};

const of = (messages: ReadonlyArray<Message>, sessionId: string, type: string) =>
  messages.filter((m) => m.sessionId === sessionId && m.type === type);

describe("the Stately inspector", () => {
  let inspector: StatelyInspector;
  let client: Awaited<ReturnType<typeof listen>>;
  const first = { key: "default/snapshot-1", uid: "9f1c-uid-1" };
  const second = { key: "default/snapshot-2", uid: "9f1c-uid-2" };
  const firstSession = sessionIdOf(first);

  beforeAll(async () => {
    inspector = await startStatelyInspector({ port: 0 });
    client = await listen(inspector.url);
  });
  afterAll(async () => {
    client.socket.close();
    await inspector.stop();
  });

  it("serves the bridge page and relays on 127.0.0.1", async () => {
    expect(inspector.url).toMatch(/^ws:\/\/127\.0\.0\.1:\d+$/);
    // The page carries the relay's viewer token in its fragment (never sent in a request).
    expect(inspector.page).toMatch(new RegExp(`^${inspector.url.replace("ws:", "http:")}/#view=[\\w-]{32}$`));
    const page = await fetch(inspector.page ?? "", { signal: AbortSignal.timeout(5_000) });
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('src="https://stately.ai/inspect"');
    expect(html).toContain("location.host");
    expect(html).toContain("location.hash");
  });

  it("streams one actor per task with the definition, the pass events and the snapshots", async () => {
    driveLifecycle(first, newTask("snapshot-1", first.uid), inspector.observer);
    driveLifecycle(second, newTask("snapshot-2", second.uid), inspector.observer);
    // 3 passes per task: actor (1), start snapshots (2), events (3 + 2 + 3), final snapshots (3).
    await vi.waitFor(() => expect(client.messages.length).toBe(2 * 14), { timeout: 10_000, interval: 20 });
    const { messages } = client;

    const actors = messages.filter((m) => m.type === "@xstate.actor");
    expect(actors.map((m) => [m.sessionId, m.name])).toEqual([
      [firstSession, first.key],
      [sessionIdOf(second), second.key],
    ]);
    const [actor] = actors;
    const definition = JSON.parse(actor?.definition ?? "{}") as { id: string; states: object };
    expect(definition.id).toBe("task");
    expect(actor?.definition).not.toMatch(/\[(Object|Array)\]/);
    expect(Object.keys(definition.states)).toEqual(
      expect.arrayContaining(["idle", "admission", "execution", "deletion", "retained", "released"]),
    );
    expect(actor?.snapshot?.value).toBe("idle");
    expect(messages.every((m) => m.rootId === m.sessionId)).toBe(true);

    const events = of(messages, firstSession, "@xstate.event").map((m) => m.event);
    expect(events.map((e) => [e?.type, e?.phase])).toEqual([
      ["reconcile", undefined],
      ["phase.completed", "admit"],
      ["phase.retry", "execute"],
      ["reconcile", undefined],
      ["phase.completed", "execute"],
      ["reconcile", undefined],
      ["delete.done", undefined],
      ["phase.completed", "cleanup"],
    ]);
    expect(events[1]?.steps).toEqual([
      "admission.calling → execution.gate",
      "execution.gate → execution.calling",
    ]);

    const snapshots = of(messages, firstSession, "@xstate.snapshot").map((m) => m.snapshot);
    expect(snapshots.map((s) => [s?.value, s?.context.state])).toEqual([
      [{ execution: "retrying" }, "InProgress"],
      ["idle", "InProgress"],
      ["retained", "Succeeded"],
      ["idle", "Succeeded"],
      ["released", "Succeeded"],
    ]);
    const last = snapshots.at(-1)?.context ?? {};
    expect(Object.keys(last)).toEqual(expect.arrayContaining(["status", "persisted", "task", "now"]));
    expect(last).not.toHaveProperty("input");
    expect(last).not.toHaveProperty("config");
    expect(JSON.stringify(last)).not.toContain("backoffCapMs");
  });

  it("replays every task's actor to a viewer that joins late", async () => {
    const late = await listen(inspector.url);
    try {
      await vi.waitFor(
        () => expect(of(late.messages, sessionIdOf(second), "@xstate.actor")).toHaveLength(1),
        {
          timeout: 5_000,
          interval: 20,
        },
      );
      expect(late.messages[0]?.type).toBe("@xstate.actor");
      expect(late.messages.filter((m) => m.type === "@xstate.actor")).toHaveLength(2);
    } finally {
      late.socket.close();
      await late.closed;
    }
  });

  it("stop() closes the relay: connected viewers are disconnected", async () => {
    const viewer = await listen(inspector.url);
    await inspector.stop();
    await viewer.closed;
    await expect(listen(inspector.url)).rejects.toThrow(/cannot connect/);
  });
});

describe("the relay's replay for late viewers", () => {
  const message = (type: string, sessionId: string, n = 0) => JSON.stringify({ type, sessionId, n });

  it("keeps each actor and its latest snapshot once the window has moved past them", () => {
    const history = new RelayHistory({ windowSize: 3, maxActors: 10 });
    history.record(message("@xstate.actor", "a"));
    history.record(message("@xstate.snapshot", "a", 1));
    history.record(message("@xstate.actor", "b"));
    for (let n = 0; n < 3; n += 1) history.record(message("@xstate.event", "b", n));
    expect(history.replay().map((m) => JSON.parse(m))).toEqual([
      { type: "@xstate.actor", sessionId: "a", n: 0 },
      { type: "@xstate.snapshot", sessionId: "a", n: 1 },
      { type: "@xstate.actor", sessionId: "b", n: 0 },
      { type: "@xstate.event", sessionId: "b", n: 0 },
      { type: "@xstate.event", sessionId: "b", n: 1 },
      { type: "@xstate.event", sessionId: "b", n: 2 },
    ]);
  });

  it("forgets the least recently active actor beyond its limit", () => {
    const history = new RelayHistory({ windowSize: 10, maxActors: 2 });
    history.record(message("@xstate.actor", "a"));
    history.record(message("@xstate.actor", "b"));
    history.record(message("@xstate.snapshot", "a", 1));
    history.record(message("@xstate.actor", "c"));
    const actors = history.replay().map((m) => JSON.parse(m) as { type: string; sessionId: string });
    expect(actors.filter((m) => m.type === "@xstate.actor").map((m) => m.sessionId)).toEqual(["a", "c"]);
  });
});

/** Runs test/inspect/exit-child.ts in a fresh Node process; it must exit by itself after `stop()`. */
const runChild = (mode: string) =>
  new Promise<{ code: number | null; signal: string | null; ms: number; stdout: string; stderr: string }>(
    (resolve, reject) => {
      const started = Date.now();
      const child = spawn(
        process.execPath,
        [fileURLToPath(new URL("./exit-child.ts", import.meta.url)), mode],
        {
          stdio: ["ignore", "pipe", "pipe"],
          timeout: 20_000,
        },
      );
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (chunk: Buffer) => {
        stdout += chunk.toString();
      });
      child.stderr.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      child.on("error", reject);
      child.on("exit", (code, signal) => resolve({ code, signal, ms: Date.now() - started, stdout, stderr }));
    },
  );

describe("after stop(), the process exits by itself", () => {
  it("with the in-process relay and a viewer still connected; the library loads only on start", async () => {
    const result = await runChild("relay");
    expect(result.stderr).toBe("");
    expect(result.signal).toBeNull();
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as Record<string, unknown>;
    expect(report).toMatchObject({
      loadedByImport: [],
      loadedByStart: ["@statelyai/inspect", "ws"],
      viewerClosed: true,
    });
    expect(report.received).toBeGreaterThanOrEqual(13);
    // Far below the library's 5 s reconnect: nothing waited for a timer.
    expect(report.exitAfterStopMs).toBeLessThan(2_000);
  });

  it("with a relay URL where nothing listens (the library's adapter would retry for ever)", async () => {
    const result = await runChild("unreachable");
    expect(result.stderr).toBe("");
    expect(result.signal).toBeNull();
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ stopped: true });
  });
});
