/**
 * The inspection relay: HTTP + WebSocket on one port, speaking the protocol of @statelyai/inspect's
 * `createInspectorServer` (`GET /` serves a page that iframes the Stately inspector and forwards every
 * relayed message to it; each WebSocket message is re-broadcast to all other clients; late joiners get
 * a replay). `createInspectorServer` 0.7.2 itself is not used because it binds every interface (no host
 * option), crashes the process on EADDRINUSE (unhandled `error` event), and its `stop()` neither waits
 * nor closes connected clients, so one open viewer keeps the process alive.
 *
 * Who may connect: the Host must be one of the relay's own names (loopback ones when bound to loopback,
 * against DNS rebinding), and a browser's Origin must be the relay's own page; clients that send no
 * Origin (the controller, tools) are let in. Other sites' pages get neither the page nor the socket.
 *
 * Replay: the last `windowSize` messages, preceded by every known actor's `@xstate.actor` message (and
 * its latest snapshot when that fell out of the window), so that a viewer opened late still gets the
 * definition of every task, which a plain last-N buffer loses on a busy controller. Both are bounded in
 * bytes as well (`maxBytes` each): the oldest messages, then the least recently active actors, go first.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type RawData, type WebSocket, WebSocketServer } from "ws";
import { allowedHosts, hostName } from "../ui/board-guard.ts";

export interface RelayOptions {
  /** 0 picks a free port. */
  readonly port: number;
  readonly host?: string;
  /** The inspector UI the page embeds. */
  readonly viewerUrl?: string;
  readonly windowSize?: number;
  readonly maxActors?: number;
  /** Bytes kept for the replay window, and again for the actors (default 8 MiB each). */
  readonly maxBytes?: number;
}

export interface Relay {
  /** `ws://host:port`, for inspectors and receivers. */
  readonly url: string;
  /** `http://host:port/`, the page to open in a browser. */
  readonly page: string;
  readonly port: number;
  readonly stop: () => Promise<void>;
}

interface Recorded {
  readonly seq: number;
  readonly message: string;
}

interface ActorRecord {
  readonly actor: string;
  latestSnapshot: Recorded | undefined;
}

const actorBytes = (record: ActorRecord): number =>
  record.actor.length + (record.latestSnapshot?.message.length ?? 0);

/** What the relay remembers for late joiners. */
export class RelayHistory {
  private seq = 0;
  private readonly window: Recorded[] = [];
  private readonly actors = new Map<string, ActorRecord>();
  private readonly windowSize: number;
  private readonly maxActors: number;
  private readonly maxBytes: number;
  private windowBytes = 0;
  private actorsBytes = 0;

  constructor(windowSize = 200, maxActors = 500, maxBytes = 8 * 1024 * 1024) {
    this.windowSize = windowSize;
    this.maxActors = maxActors;
    this.maxBytes = maxBytes;
  }

  /** Characters held (window and actors), for the bounds. */
  get bytes(): number {
    return this.windowBytes + this.actorsBytes;
  }

  private setActor(sessionId: string, record: ActorRecord): void {
    const previous = this.actors.get(sessionId);
    if (previous !== undefined) this.actorsBytes -= actorBytes(previous);
    this.actors.delete(sessionId);
    this.actors.set(sessionId, record);
    this.actorsBytes += actorBytes(record);
    for (;;) {
      const oldest = this.actors.entries().next();
      if (oldest.done || (this.actors.size <= this.maxActors && this.actorsBytes <= this.maxBytes)) break;
      this.actors.delete(oldest.value[0]);
      this.actorsBytes -= actorBytes(oldest.value[1]);
    }
  }

  record(message: string): void {
    const seq = ++this.seq;
    const { type, sessionId } = classify(message);
    if (type === "@xstate.actor" && sessionId !== undefined) {
      this.setActor(sessionId, { actor: message, latestSnapshot: undefined });
      return;
    }
    if (type === "@xstate.snapshot" && sessionId !== undefined) {
      const actor = this.actors.get(sessionId);
      // Most recently active last, so that the least recently active actor is evicted first.
      if (actor !== undefined)
        this.setActor(sessionId, { actor: actor.actor, latestSnapshot: { seq, message } });
    }
    this.window.push({ seq, message });
    this.windowBytes += message.length;
    while (
      this.window.length > this.windowSize ||
      (this.windowBytes > this.maxBytes && this.window.length > 0)
    )
      this.windowBytes -= this.window.shift()?.message.length ?? 0;
  }

  /** Messages for a client that joins now, in the order to send them. */
  replay(): string[] {
    const windowStart = this.window[0]?.seq ?? this.seq + 1;
    const out: string[] = [];
    for (const { actor, latestSnapshot } of this.actors.values()) {
      out.push(actor);
      if (latestSnapshot !== undefined && latestSnapshot.seq < windowStart) out.push(latestSnapshot.message);
    }
    for (const { message } of this.window) out.push(message);
    return out;
  }
}

const classify = (message: string): { type?: string; sessionId?: string } => {
  try {
    const parsed: unknown = JSON.parse(message);
    if (typeof parsed !== "object" || parsed === null) return {};
    const type = "type" in parsed && typeof parsed.type === "string" ? parsed.type : undefined;
    const sessionId =
      "sessionId" in parsed && typeof parsed.sessionId === "string" ? parsed.sessionId : undefined;
    return { ...(type === undefined ? {} : { type }), ...(sessionId === undefined ? {} : { sessionId }) };
  } catch {
    return {};
  }
};

const text = (data: RawData): string =>
  Array.isArray(data)
    ? Buffer.concat(data).toString("utf8")
    : Buffer.isBuffer(data)
      ? data.toString("utf8")
      : Buffer.from(data).toString("utf8");

/** The library's bridge page, except that it connects back to the host it was served from (port-forwards). */
export const bridgePage = (viewerUrl: string): string => `<!DOCTYPE html>
<html>
<head>
  <title>opstask: Stately Inspector</title>
  <style>* { margin: 0; padding: 0; } html, body { height: 100%; } iframe { width: 100%; height: 100%; border: none; }</style>
</head>
<body>
  <iframe id="inspector" src="${viewerUrl}"></iframe>
  <script>
    const iframe = document.getElementById('inspector');
    const buffer = [];
    let connected = false;
    window.addEventListener('message', (e) => {
      if (e.data && e.data.type === '@statelyai.connected') {
        connected = true;
        for (const event of buffer) iframe.contentWindow.postMessage(event, '*');
        buffer.length = 0;
      }
    });
    const ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host);
    ws.onmessage = (event) => {
      const data = JSON.parse(event.data);
      if (connected) iframe.contentWindow.postMessage(data, '*');
      else buffer.push(data);
    };
  </script>
</body>
</html>`;

export const startRelay = async (options: RelayOptions): Promise<Relay> => {
  const host = options.host ?? "127.0.0.1";
  const page = bridgePage(options.viewerUrl ?? "https://stately.ai/inspect");
  const history = new RelayHistory(options.windowSize, options.maxActors, options.maxBytes);
  const hosts = allowedHosts(host);
  /** Why a request may not reach the page or the socket; undefined when it may. */
  const refused = (request: IncomingMessage): string | undefined => {
    const hostHeader = request.headers.host?.toLowerCase();
    if (hostHeader === undefined) return "no Host header";
    if (hosts !== undefined && !hosts.has(hostName(hostHeader)))
      return `Host ${hostHeader} is not this relay's address`;
    const origin = request.headers.origin;
    if (origin !== undefined && origin !== `http://${hostHeader}`)
      return `Origin ${origin} may not use this relay`;
    return undefined;
  };
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const reason = refused(request);
    if (reason !== undefined) {
      response.writeHead(403, { "content-type": "text/plain" });
      response.end(`${reason}\n`);
      return;
    }
    if (request.method === "GET" && (request.url === "/" || request.url?.startsWith("/?") === true)) {
      response.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      response.end(page);
      return;
    }
    response.writeHead(404, { "content-type": "text/plain" });
    response.end("not found\n");
  });
  const wss = new WebSocketServer({
    server,
    maxPayload: 4 * 1024 * 1024,
    verifyClient: (
      { req }: { req: IncomingMessage },
      done: (allowed: boolean, code?: number, message?: string) => void,
    ) => {
      const reason = refused(req);
      done(reason === undefined, 403, reason);
    },
  });
  // `ws` re-emits the HTTP server's errors here; listen errors are reported by the promise below.
  wss.on("error", () => {});
  wss.on("connection", (client: WebSocket) => {
    client.on("error", () => {});
    for (const message of history.replay()) client.send(message);
    client.on("message", (data: RawData) => {
      const message = text(data);
      history.record(message);
      for (const other of wss.clients)
        if (other !== client && other.readyState === other.OPEN) other.send(message);
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, host, () => {
      server.off("error", reject);
      resolve();
    });
  }).catch((error: unknown) => {
    wss.close();
    throw error;
  });

  const { port } = server.address() as AddressInfo; // listening on TCP, so the address is an AddressInfo
  const authority = `${host.includes(":") ? `[${host}]` : host}:${port}`;
  let stopping: Promise<void> | undefined;
  return {
    url: `ws://${authority}`,
    page: `http://${authority}/`,
    port,
    stop: () => {
      stopping ??= new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        wss.close();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return stopping;
    },
  };
};
