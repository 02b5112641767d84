/**
 * The inspection relay on 127.0.0.1 against what a web page in a browser on the same machine can do:
 * connect a WebSocket from a foreign Origin, reach it under a rebound DNS name (wrong Host), or
 * connect as a viewer and send events. And its replay history stays under its byte cap when a
 * publisher sends large messages.
 */
import { request as httpRequest } from "node:http";
import { afterEach, describe, expect, it, vi } from "vitest";
import { type Relay, RelayHistory, startRelay } from "../../src/inspect/relay.ts";

const relays: Relay[] = [];
afterEach(async () => {
  for (const relay of relays.splice(0)) await relay.stop();
});

const relay = async (options: Partial<Parameters<typeof startRelay>[0]> = {}) => {
  const started = await startRelay({ port: 0, ...options });
  relays.push(started);
  return started;
};

/** Opens a WebSocket (Node's, which lets us set headers a browser would send) and records messages. */
const connect = (url: string, headers: Record<string, string> = {}) =>
  new Promise<{ socket: WebSocket; messages: string[]; closed: Promise<number> }>((resolve, reject) => {
    // Node's WebSocket (undici) accepts headers beside protocols; a browser sets Origin by itself.
    const socket = new WebSocket(url, { headers } as unknown as string[]);
    const messages: string[] = [];
    const closed = new Promise<number>((done) => socket.addEventListener("close", (e) => done(e.code)));
    socket.addEventListener("message", (event) => messages.push(String(event.data)));
    socket.addEventListener("open", () => resolve({ socket, messages, closed }), { once: true });
    socket.addEventListener("error", () => reject(new Error(`refused: ${url}`)), { once: true });
  });

/** A raw HTTP request with any Host header; resolves the status code. */
const statusOf = (port: number, path: string, headers: Record<string, string>) =>
  new Promise<number>((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, path, headers, timeout: 5_000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    // A WebSocket handshake that succeeds is answered 101 and handed over as an upgrade.
    req.on("upgrade", (res, socket) => {
      socket.destroy();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end();
  });

const upgradeStatusOf = (port: number, path: string, headers: Record<string, string>) =>
  statusOf(port, path, {
    connection: "Upgrade",
    upgrade: "websocket",
    "sec-websocket-version": "13",
    "sec-websocket-key": Buffer.from("0123456789abcdef").toString("base64"),
    ...headers,
  });

const event = (n: number) => JSON.stringify({ type: "@xstate.event", sessionId: "ns/t@u", n });

describe("the inspection relay refuses what a foreign web page can send", () => {
  it("refuses a WebSocket from a foreign Origin, and admits its own page's origin", async () => {
    const { url, port } = await relay();
    await expect(connect(url, { origin: "https://evil.example" })).rejects.toThrow(/refused/);
    await expect(connect(url, { origin: `http://localhost.evil.example:${port}` })).rejects.toThrow(
      /refused/,
    );
    expect(await upgradeStatusOf(port, "/", { host: `127.0.0.1:${port}`, origin: "null" })).toBe(403);
    const own = await connect(url, { origin: `http://127.0.0.1:${port}` });
    own.socket.close();
    const named = { host: `localhost:${port}`, origin: `http://localhost:${port}` };
    expect(await upgradeStatusOf(port, "/", named)).toBe(101);
    // The page's own origin is the host it was loaded from: another loopback name is another origin.
    expect(await upgradeStatusOf(port, "/", { ...named, origin: `http://127.0.0.1:${port}` })).toBe(403);
  });

  it("refuses requests whose Host is not a loopback name (DNS rebinding), page and WebSocket alike", async () => {
    const { port } = await relay();
    expect(await statusOf(port, "/", { host: `127.0.0.1:${port}` })).toBe(200);
    expect(await statusOf(port, "/", { host: `localhost:${port}` })).toBe(200);
    expect(await statusOf(port, "/", { host: `rebound.evil.example:${port}` })).toBe(421);
    expect(await statusOf(port, "/", { host: "rebound.evil.example" })).toBe(421);
    expect(await upgradeStatusOf(port, "/", { host: `rebound.evil.example:${port}` })).toBe(421);
  });

  it("works through a port-forward (another port in Host and Origin), for its own page only", async () => {
    const { port } = await relay();
    const forwarded = { host: "127.0.0.1:19090" };
    expect(await statusOf(port, "/", forwarded)).toBe(200);
    expect(await upgradeStatusOf(port, "/", { ...forwarded, origin: "http://127.0.0.1:19090" })).toBe(101);
    // Another local server's page is another origin.
    expect(await upgradeStatusOf(port, "/", { ...forwarded, origin: "http://localhost:3000" })).toBe(403);
    expect(await upgradeStatusOf(port, "/", { ...forwarded, origin: "https://127.0.0.1:19090" })).toBe(403);
  });

  it("the page may not be framed by another page", async () => {
    const { page } = await relay();
    const response = await fetch(page, { signal: AbortSignal.timeout(5_000) });
    expect(response.headers.get("content-security-policy")).toBe("frame-ancestors 'none'");
  });

  it("a viewer cannot inject events that other viewers see; the publisher's reach them", async () => {
    const { url, publishUrl } = await relay();
    expect(publishUrl).toMatch(/\/publish\?token=[\w-]{20,}$/);
    const victim = await connect(url);
    const attacker = await connect(url);
    attacker.socket.send(event(666));
    expect(await attacker.closed).toBe(1008); // policy violation: viewers may not publish
    const publisher = await connect(publishUrl);
    publisher.socket.send(event(1));
    await vi.waitFor(() => expect(victim.messages).toEqual([event(1)]), { timeout: 5_000, interval: 20 });
    // A viewer that joins now replays only what the publisher sent.
    const late = await connect(url);
    await vi.waitFor(() => expect(late.messages).toEqual([event(1)]), { timeout: 5_000, interval: 20 });
    for (const client of [victim, late, publisher]) client.socket.close();
  });

  it("refuses a publisher with a wrong or missing token", async () => {
    const { url, port } = await relay();
    await expect(connect(`${url}/publish?token=guessed`)).rejects.toThrow(/refused/);
    await expect(connect(`${url}/publish`)).rejects.toThrow(/refused/);
    expect(await upgradeStatusOf(port, "/publish?token=x", { host: `127.0.0.1:${port}` })).toBe(403);
  });
});

describe("the relay's history stays under its byte cap", () => {
  it("with large messages, in the history and in the running relay", async () => {
    const cap = 1024 * 1024;
    const history = new RelayHistory({ maxBytes: cap });
    const big = (n: number, type = "@xstate.event", sessionId = `ns/t${n}@u`) =>
      JSON.stringify({ type, sessionId, n, pad: "x".repeat(200_000) });
    for (let n = 0; n < 60; n += 1) {
      history.record(big(n, n % 3 === 0 ? "@xstate.actor" : "@xstate.snapshot"));
      expect(history.size()).toBeLessThanOrEqual(cap);
    }
    const replayed = history.replay();
    expect(replayed.reduce((total, message) => total + message.length, 0)).toBe(history.size());
    // The newest messages are what is kept.
    expect(replayed.some((message) => message.includes('"n":59'))).toBe(true);
    // A message larger than the whole cap is never kept.
    history.record(JSON.stringify({ type: "@xstate.event", pad: "y".repeat(cap + 1) }));
    expect(history.replay().some((message) => message.includes("yyyy"))).toBe(false);

    const { url, publishUrl } = await relay({ maxHistoryBytes: cap });
    const live = await connect(url);
    const publisher = await connect(publishUrl);
    for (let n = 0; n < 60; n += 1) publisher.socket.send(big(n));
    // Relayed live in full: 60 messages of 200 KB, 12 MB, twelve times the cap.
    await vi.waitFor(() => expect(live.messages).toHaveLength(60), { timeout: 10_000, interval: 50 });
    const late = await connect(url);
    await vi.waitFor(() => expect(late.messages.at(-1) ?? "").toContain('"n":59'), {
      timeout: 5_000,
      interval: 50,
    });
    const replayedBytes = late.messages.reduce((total, message) => total + message.length, 0);
    expect(replayedBytes).toBeLessThanOrEqual(cap);
    expect(late.messages.length).toBeGreaterThanOrEqual(4);
    for (const client of [live, late]) client.socket.close();
    publisher.socket.close();
  });
});
