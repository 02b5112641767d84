/**
 * The inspection relay: HTTP + WebSocket on one loopback port, speaking the protocol of
 * @statelyai/inspect's `createInspectorServer` (`GET /` serves a page that iframes the inspector; late
 * joiners get a replay). Only the publisher holding `publishUrl`'s token may send; Host and Origin are
 * checked on every request (relay-guard.ts); the replay, each viewer's backlog and the number of viewers
 * are bounded (relay-history.ts, relay-viewers.ts), and the developer's own viewers (`page`, which
 * carries the relay's viewer token) have places of their own. Why not `createInspectorServer`:
 * docs/design-notes.md §16.
 */
import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { type RawData, type WebSocket, WebSocketServer } from "ws";
import { http } from "../node-http.ts";
import {
  isAllowedOrigin,
  isLoopbackHost,
  namesViewToken,
  PublishPath,
  presentsToken,
  presentsViewToken,
  ViewParameter,
} from "./relay-guard.ts";
import { DefaultHistoryLimits, RelayHistory } from "./relay-history.ts";
import { DefaultViewerLimits, RelayViewers } from "./relay-viewers.ts";

export { RelayHistory } from "./relay-history.ts";

export interface RelayOptions {
  /** 0 picks a free port. */
  readonly port: number;
  /** A loopback address (default 127.0.0.1): the Host check admits loopback names only. */
  readonly host?: string;
  /** The inspector UI the page embeds. */
  readonly viewerUrl?: string;
  readonly windowSize?: number;
  readonly maxActors?: number;
  /** Bound on the replay history (see relay-history.ts). */
  readonly maxHistoryBytes?: number;
  /** Live bytes a viewer may leave unread beyond its replay before it is disconnected (relay-viewers.ts). */
  readonly maxViewerBacklogBytes?: number;
  /** Anonymous viewers connected at once; the next is closed with 1013 and a reason. */
  readonly maxViewers?: number;
  /** The developer's own viewers (`page`, `viewUrl`) at once; the next replaces the oldest of them. */
  readonly maxOwnViewers?: number;
}

export interface Relay {
  /** `ws://host:port`, for anonymous viewers (receive only, in the places left to them). */
  readonly url: string;
  /** `ws://host:port/?view=…`, for the developer's own viewers: places no anonymous viewer can take. */
  readonly viewUrl: string;
  /** `ws://host:port/publish?token=…`, for the controller's adapter alone: whoever holds it may publish. */
  readonly publishUrl: string;
  /** `http://host:port/#view=…`, the page to open in a browser: it connects as an own viewer. */
  readonly page: string;
  readonly port: number;
  /** Unsent bytes the relay holds for each connected viewer. */
  readonly viewerBacklogs: () => number[];
  readonly stop: () => Promise<void>;
}

/** Largest message a publisher may send; a snapshot holds one task's status (~1 KB, rarely more). */
const MaxMessageBytes = 1024 * 1024;

const text = (data: RawData): string =>
  Array.isArray(data)
    ? Buffer.concat(data).toString("utf8")
    : Buffer.isBuffer(data)
      ? data.toString("utf8")
      : Buffer.from(data).toString("utf8");

const refuse = (socket: Socket, status: 403 | 421, reason: string): void => {
  socket.end(
    `HTTP/1.1 ${status} ${status === 403 ? "Forbidden" : "Misdirected Request"}\r\nconnection: close\r\ncontent-type: text/plain\r\ncontent-length: ${reason.length + 1}\r\n\r\n${reason}\n`,
  );
};

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
    // The viewer token rides in the fragment, which no request carries (nor a Referer).
    const view = new URLSearchParams(location.hash.slice(1)).get('${ViewParameter}');
    const ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + (view ? '/?${ViewParameter}=' + encodeURIComponent(view) : ''));
    ws.onclose = (event) => {
      const notice = document.createElement('p');
      notice.style.cssText = 'position: fixed; top: 0; left: 0; right: 0; padding: 4px; background: #fde68a; font: 14px sans-serif';
      notice.textContent = 'Disconnected from the relay' + (event.reason ? ': ' + event.reason : ' (code ' + event.code + ')') + '. Reload to reconnect.';
      document.body.appendChild(notice);
    };
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
  const token = randomBytes(24).toString("base64url");
  const viewToken = randomBytes(24).toString("base64url");
  const history = new RelayHistory({
    windowSize: options.windowSize ?? DefaultHistoryLimits.windowSize,
    maxActors: options.maxActors ?? DefaultHistoryLimits.maxActors,
    maxBytes: options.maxHistoryBytes ?? DefaultHistoryLimits.maxBytes,
  });
  const server = http.createServer((request: IncomingMessage, response: ServerResponse) => {
    if (!isLoopbackHost(request.headers.host)) {
      response.writeHead(421, { "content-type": "text/plain" }).end("Host must be a loopback name\n");
      return;
    }
    if (request.method === "GET" && (request.url === "/" || request.url?.startsWith("/?") === true)) {
      response.writeHead(200, {
        "content-type": "text/html; charset=utf-8",
        // The page shows every task: no other page may frame it.
        "content-security-policy": "frame-ancestors 'none'",
        "x-frame-options": "DENY",
      });
      response.end(page);
      return;
    }
    response.writeHead(404, { "content-type": "text/plain" });
    response.end("not found\n");
  });
  const viewers = new RelayViewers({
    maxBacklogBytes: options.maxViewerBacklogBytes ?? DefaultViewerLimits.maxBacklogBytes,
    maxViewers: options.maxViewers ?? DefaultViewerLimits.maxViewers,
    maxOwnViewers: options.maxOwnViewers ?? DefaultViewerLimits.maxOwnViewers,
  });
  const wss = new WebSocketServer({ noServer: true, maxPayload: MaxMessageBytes });
  const publishers = new Set<WebSocket>();
  server.on("upgrade", (request: IncomingMessage, socket: Socket, head: Buffer) => {
    socket.on("error", () => {});
    if (!isLoopbackHost(request.headers.host)) return refuse(socket, 421, "Host must be a loopback name");
    if (!isAllowedOrigin(request.headers.origin, request.headers.host))
      return refuse(socket, 403, "Origin is not this relay's page");
    const publisher = presentsToken(request.url, token);
    if (!publisher && request.url?.startsWith(PublishPath) === true)
      return refuse(socket, 403, "wrong publish token");
    if (namesViewToken(request.url) && !presentsViewToken(request.url, viewToken))
      return refuse(socket, 403, "wrong viewer token");
    wss.handleUpgrade(request, socket, head, (client) => {
      if (publisher) publishers.add(client);
      wss.emit("connection", client, request);
    });
  });
  wss.on("connection", (client: WebSocket, request: IncomingMessage) => {
    client.on("error", () => {});
    if (!publishers.has(client)) {
      if (!viewers.admit(client, history.replay(), presentsViewToken(request.url, viewToken))) return;
      client.once("close", () => viewers.remove(client));
      // A viewer only receives: whatever it sends is policy violation.
      client.on("message", () => client.close(1008, "viewers may not publish"));
      return;
    }
    client.on("close", () => publishers.delete(client));
    client.on("message", (data: RawData) => {
      const message = text(data);
      history.record(message);
      viewers.broadcast(message);
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
    viewUrl: `ws://${authority}/?${ViewParameter}=${viewToken}`,
    publishUrl: `ws://${authority}${PublishPath}?token=${token}`,
    page: `http://${authority}/#${ViewParameter}=${viewToken}`,
    port,
    viewerBacklogs: () => viewers.backlogs(),
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
