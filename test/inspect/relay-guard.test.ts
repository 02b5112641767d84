/**
 * The Stately inspector's relay (src/inspect/relay.ts) under the task board's rules: other sites' pages
 * may neither open its page nor its socket, and what it keeps for late viewers is bounded in bytes.
 */
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { type Relay, RelayHistory, startRelay } from "../../src/inspect/relay.ts";

/** Whether a WebSocket with these headers gets through: `open`, or the HTTP status it was refused with. */
const connect = (url: string, headers: Record<string, string>): Promise<"open" | number> =>
  new Promise((resolve, reject) => {
    const socket = new WebSocket(url, { headers });
    socket.once("open", () => {
      socket.close();
      resolve("open");
    });
    socket.once("unexpected-response", (_request, response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    socket.once("error", (error) => {
      if (!String(error).includes("Unexpected server response")) reject(error);
    });
  });

const pageStatus = (relay: Relay, headers: Record<string, string>): Promise<number> =>
  new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port: relay.port, path: "/", headers }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end();
  });

describe("the inspector relay's guard", () => {
  let relay: Relay;
  beforeAll(async () => {
    relay = await startRelay({ port: 0, host: "127.0.0.1" });
  });
  afterAll(async () => {
    await relay.stop();
  });

  it("lets in the controller and tools (no Origin) and its own page", async () => {
    expect(await connect(relay.url, {})).toBe("open");
    expect(await connect(relay.url, { origin: `http://127.0.0.1:${relay.port}` })).toBe("open");
    expect(await pageStatus(relay, {})).toBe(200);
  });

  it("refuses another site's page and a foreign Host", async () => {
    expect(await connect(relay.url, { origin: "http://evil.example" })).toBe(403);
    expect(await connect(relay.url, { origin: `http://127.0.0.1:${relay.port + 1}` })).toBe(403);
    expect(await connect(relay.url, { host: `evil.example:${relay.port}` })).toBe(403);
    expect(await pageStatus(relay, { host: `evil.example:${relay.port}` })).toBe(403);
  });
});

describe("the relay's replay bounds", () => {
  it("keeps at most maxBytes of window and of actors, newest kept", () => {
    const maxBytes = 50_000;
    const history = new RelayHistory(1_000, 1_000, maxBytes);
    const pad = "x".repeat(1_000);
    for (let n = 0; n < 500; n += 1) {
      history.record(JSON.stringify({ type: "@xstate.actor", sessionId: `s${n}`, pad }));
      history.record(JSON.stringify({ type: "@xstate.snapshot", sessionId: `s${n}`, pad }));
      history.record(JSON.stringify({ type: "@xstate.event", sessionId: `s${n}`, n, pad }));
      expect(history.bytes).toBeLessThanOrEqual(2 * maxBytes);
    }
    const replayed = history
      .replay()
      .map((message) => JSON.parse(message) as { type: string; sessionId: string });
    expect(replayed.some((message) => message.sessionId === "s499")).toBe(true);
    expect(replayed.some((message) => message.sessionId === "s0")).toBe(false);
  });
});
