/**
 * The inspection relay bounds what it holds for each viewer, and the number of viewers: a viewer whose
 * socket never reads is disconnected once its unsent bytes would pass its allowance, while the viewers
 * that read still get every message; the viewer past the limit is told why it was refused; and however
 * many anonymous viewers hold the places, the developer's own viewer (the relay's viewer token, which
 * its page carries) is admitted.
 */
import { type Socket, connect as tcpConnect } from "node:net";
import { afterEach, describe, expect, it, vi } from "vitest";
import { type Relay, startRelay } from "../../src/inspect/relay.ts";
import { RelayViewers } from "../../src/inspect/relay-viewers.ts";

const relays: Relay[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const relay of relays.splice(0)) await relay.stop();
});

const relay = async (options: Partial<Parameters<typeof startRelay>[0]> = {}) => {
  const started = await startRelay({ port: 0, ...options });
  relays.push(started);
  return started;
};

/** A viewer (Node's WebSocket) that reads everything it is sent. */
const readingViewer = (url: string) =>
  new Promise<{ socket: WebSocket; messages: string[]; closed: Promise<CloseEvent> }>((resolve, reject) => {
    const socket = new WebSocket(url);
    const messages: string[] = [];
    const closed = new Promise<CloseEvent>((done) => socket.addEventListener("close", done));
    socket.addEventListener("message", (event) => messages.push(String(event.data)));
    socket.addEventListener("open", () => resolve({ socket, messages, closed }), { once: true });
    socket.addEventListener("error", () => reject(new Error(`refused: ${url}`)), { once: true });
  });

/**
 * A viewer on a raw TCP socket that completes the WebSocket handshake and then never reads again
 * (paused: the kernel's buffers fill, then the relay's).
 */
const idleViewer = (port: number, path = "/") =>
  new Promise<Socket>((resolve, reject) => {
    const socket = tcpConnect({ host: "127.0.0.1", port }, () => {
      socket.write(
        [
          `GET ${path} HTTP/1.1`,
          `host: 127.0.0.1:${port}`,
          "connection: Upgrade",
          "upgrade: websocket",
          "sec-websocket-version: 13",
          `sec-websocket-key: ${Buffer.from("0123456789abcdef").toString("base64")}`,
          "",
          "",
        ].join("\r\n"),
      );
    });
    sockets.push(socket);
    let head = "";
    const onData = (chunk: Buffer) => {
      head += chunk.toString("latin1");
      if (!head.includes("\r\n\r\n")) return;
      socket.off("data", onData);
      socket.pause();
      if (head.startsWith("HTTP/1.1 101")) resolve(socket);
      else reject(new Error(`handshake refused: ${head.split("\r\n")[0]}`));
    };
    socket.on("data", onData);
    socket.on("error", reject);
  });

const message = (n: number, padBytes: number) =>
  JSON.stringify({ type: "@xstate.event", sessionId: "ns/t@u", n, pad: "x".repeat(padBytes) });

describe("the relay bounds what it holds for a viewer that does not read", () => {
  it("disconnects the idle viewer within its allowance; the reading viewer gets every message", async () => {
    const backlog = 2 * 1024 * 1024;
    const started = await relay({ maxViewerBacklogBytes: backlog, maxHistoryBytes: 1024 * 1024 });
    await idleViewer(started.port);
    const reader = await readingViewer(started.url);
    await vi.waitFor(() => expect(started.viewerBacklogs()).toHaveLength(2), { timeout: 5_000 });
    const publisher = await readingViewer(started.publishUrl);

    // 120 messages of 256 KiB: 30 MiB, far more than the kernel's socket buffers take for the idle one.
    const count = 120;
    const size = 256 * 1024;
    let peak = 0;
    const sampler = setInterval(() => {
      peak = Math.max(peak, ...started.viewerBacklogs());
    }, 5);
    // At the pace of the reader (as the controller publishes: a pass at a time), so that only the
    // idle viewer falls behind.
    for (let n = 0; n < count; n += 1) {
      publisher.socket.send(message(n, size));
      await vi.waitFor(() => expect(reader.messages).toHaveLength(n + 1), { timeout: 10_000, interval: 2 });
    }
    clearInterval(sampler);
    peak = Math.max(peak, ...started.viewerBacklogs());

    // Its replay was empty: what the relay held for it never passed the backlog bound.
    expect(peak).toBeLessThanOrEqual(backlog);
    // Gone from the relay: only the reader is left, and it holds nothing for it once read.
    expect(started.viewerBacklogs()).toHaveLength(1);
    expect(reader.messages.at(-1)).toContain(`"n":${count - 1}`);
    reader.socket.close();
    publisher.socket.close();
  });
});

/** A viewer socket that never drains: everything sent stays buffered. */
const stuckSocket = () => {
  const socket = {
    bufferedAmount: 0,
    readyState: 1,
    terminated: false,
    send: (data: Buffer) => {
      socket.bufferedAmount += data.length;
    },
    close: () => {},
    terminate: () => {
      socket.terminated = true;
      socket.readyState = 3;
    },
  };
  return socket;
};

describe("a viewer's allowance is its replay plus the backlog bound", () => {
  it("a viewer that joins late is not disconnected for its replay, only past replay + backlog", () => {
    const viewers = new RelayViewers({ maxBacklogBytes: 500, maxViewers: 4, maxOwnViewers: 4 });
    const late = stuckSocket();
    expect(viewers.admit(late, ["r".repeat(1_000), "r".repeat(1_000)], false)).toBe(true);
    viewers.broadcast("a".repeat(400));
    expect(late.terminated).toBe(false);
    expect(viewers.backlogs()).toEqual([2_400]);
    // 2,400 + 200 > 2,000 + 500: this message is not queued; the viewer is disconnected.
    viewers.broadcast("b".repeat(200));
    expect(late.terminated).toBe(true);
    expect(late.bufferedAmount).toBe(2_400);
    expect(viewers.backlogs()).toEqual([]);
  });
});

describe("the relay limits the number of viewers", () => {
  it("closes the viewer past the limit with 1013 and a reason; the admitted ones still receive", async () => {
    const started = await relay({ maxViewers: 2 });
    const first = await readingViewer(started.url);
    const second = await readingViewer(started.url);
    const third = await readingViewer(started.url);
    let refused: CloseEvent | undefined;
    void third.closed.then((event) => {
      refused = event;
    });
    await vi.waitFor(() => expect(refused).toBeDefined(), { timeout: 5_000, interval: 20 });
    expect(refused?.code).toBe(1013);
    expect(refused?.reason).toMatch(/viewer limit reached \(2\)/);

    const publisher = await readingViewer(started.publishUrl);
    publisher.socket.send(message(1, 10));
    await vi.waitFor(
      () => {
        expect(first.messages).toHaveLength(1);
        expect(second.messages).toHaveLength(1);
      },
      { timeout: 5_000, interval: 20 },
    );
    // A freed place is taken again.
    first.socket.close();
    await first.closed;
    await vi.waitFor(() => expect(started.viewerBacklogs()).toHaveLength(1), { timeout: 5_000 });
    const fourth = await readingViewer(started.url);
    await vi.waitFor(() => expect(fourth.messages).toHaveLength(1), { timeout: 5_000, interval: 20 });
    for (const client of [second, fourth, publisher]) client.socket.close();
  });
});

/** The viewer URL the relay's page connects to: its `#view=` token as the WebSocket's `?view=`. */
const ownViewUrl = (started: Relay): string => {
  const page = new URL(started.page);
  const view = new URLSearchParams(page.hash.slice(1)).get("view");
  expect(view).toMatch(/^[\w-]{32}$/);
  return `ws://${page.host}/?view=${view}`;
};

describe("the developer's own viewer is never locked out", () => {
  it("eight idle anonymous viewers hold every place; the page's viewer still gets in and receives", async () => {
    const started = await relay();
    for (let n = 0; n < 8; n += 1) await idleViewer(started.port);
    await vi.waitFor(() => expect(started.viewerBacklogs()).toHaveLength(8), { timeout: 5_000 });
    const ninth = await readingViewer(started.url);
    const refused = await ninth.closed;
    expect(refused.code).toBe(1013);
    expect(refused.reason).toMatch(/viewer limit reached \(8\).*the page the controller printed/);

    const own = await readingViewer(ownViewUrl(started));
    await vi.waitFor(() => expect(started.viewerBacklogs()).toHaveLength(9), { timeout: 5_000 });
    const publisher = await readingViewer(started.publishUrl);
    publisher.socket.send(message(1, 10));
    await vi.waitFor(() => expect(own.messages).toHaveLength(1), { timeout: 5_000, interval: 20 });
    own.socket.close();
    publisher.socket.close();
  });

  it("own viewers past their places replace the oldest own one; anonymous ones cannot take them", async () => {
    const started = await relay({ maxViewers: 1, maxOwnViewers: 2 });
    const ownUrl = ownViewUrl(started);
    await idleViewer(started.port);
    const first = await readingViewer(ownUrl);
    const second = await readingViewer(ownUrl);
    await vi.waitFor(() => expect(started.viewerBacklogs()).toHaveLength(3), { timeout: 5_000 });
    const third = await readingViewer(ownUrl);
    const replaced = await first.closed;
    expect(replaced.code).toBe(1013);
    expect(replaced.reason).toMatch(/replaced by a newer viewer/);
    const anonymous = await readingViewer(started.url);
    expect((await anonymous.closed).code).toBe(1013);

    const publisher = await readingViewer(started.publishUrl);
    publisher.socket.send(message(1, 10));
    await vi.waitFor(
      () => {
        expect(second.messages).toHaveLength(1);
        expect(third.messages).toHaveLength(1);
      },
      { timeout: 5_000, interval: 20 },
    );
    for (const client of [second, third, publisher]) client.socket.close();
  });

  it("a wrong viewer token is refused at the handshake", async () => {
    const started = await relay();
    await expect(idleViewer(started.port, "/?view=not-the-token")).rejects.toThrow(/403/);
    await expect(idleViewer(started.port, "/?view=")).rejects.toThrow(/403/);
  });

  it("RelayViewers keeps own places apart from anonymous ones", () => {
    const viewers = new RelayViewers({ maxBacklogBytes: 500, maxViewers: 2, maxOwnViewers: 1 });
    const anonymous = [stuckSocket(), stuckSocket(), stuckSocket()];
    expect(anonymous.map((socket) => viewers.admit(socket, [], false))).toEqual([true, true, false]);
    const own = [stuckSocket(), stuckSocket()];
    expect(own.map((socket) => viewers.admit(socket, [], true))).toEqual([true, true]);
    viewers.broadcast("m");
    // The two anonymous ones and the newer own one receive; the older own one was replaced.
    expect(viewers.backlogs()).toEqual([1, 1, 1]);
    expect(own.map((socket) => socket.bufferedAmount)).toEqual([0, 1]);
  });
});
