/**
 * A stand-in for the etcd-backup-restore sidecar (docs/contract.md §7): an HTTP(S) server on 127.0.0.1 whose
 * answer the test sets, recording every request (method, path, raw query, Host header, SNI, arrival
 * time). Modes: OK(body), STATUS(n), DELAY(ms, then a mode), STALL_BODY (200 headers flushed, body
 * withheld). REFUSE is a port nothing listens on (`refusedPort`). TLS when a certificate is given.
 */
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { Socket } from "node:net";
import { TLSSocket } from "node:tls";

export type StandInMode =
  | { readonly kind: "ok"; readonly body: string }
  | { readonly kind: "status"; readonly status: number; readonly body?: string }
  | { readonly kind: "delay"; readonly ms: number; readonly then: StandInMode }
  | { readonly kind: "stallBody" };

export const Mode = {
  ok: (body = ""): StandInMode => ({ kind: "ok", body }),
  status: (status: number, body?: string): StandInMode =>
    body === undefined ? { kind: "status", status } : { kind: "status", status, body },
  delay: (ms: number, then: StandInMode = { kind: "ok", body: "" }): StandInMode => ({
    kind: "delay",
    ms,
    then,
  }),
  stallBody: (): StandInMode => ({ kind: "stallBody" }),
} as const;

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  /** The raw query string without `?`; empty when there is none. */
  readonly query: string;
  readonly host: string | undefined;
  /** The TLS SNI; undefined for plain HTTP or when the client sent none. */
  readonly sni: string | undefined;
  /** The negotiated TLS version (e.g. `TLSv1.3`); undefined for plain HTTP. */
  readonly tlsVersion: string | undefined;
  /** Whether the client presented a certificate (the server asks for one but does not require it). */
  readonly clientCertificate: boolean;
  readonly arrivedAt: number;
}

export interface StandIn {
  readonly port: number;
  readonly requests: ReadonlyArray<RecordedRequest>;
  setMode(mode: StandInMode): void;
  /** Connections currently open (server side). */
  openConnections(): number;
  close(): Promise<void>;
}

export interface StandInOptions {
  readonly mode?: StandInMode;
  readonly tls?: { readonly certPem: string; readonly keyPem: string };
}

const portOf = (server: Server): number => {
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("stand-in is not listening on TCP");
  return address.port;
};

export const startStandIn = async (options: StandInOptions = {}): Promise<StandIn> => {
  let mode: StandInMode = options.mode ?? Mode.ok();
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();

  const respond = (mode: StandInMode, res: ServerResponse) => {
    switch (mode.kind) {
      case "ok":
        res.writeHead(200, { "content-type": "application/json" }).end(mode.body);
        return;
      case "status":
        res.writeHead(mode.status).end(mode.body ?? "");
        return;
      case "delay": {
        const timer = setTimeout(() => {
          timers.delete(timer);
          if (!res.destroyed) respond(mode.then, res);
        }, mode.ms);
        timers.add(timer);
        return;
      }
      case "stallBody":
        res.writeHead(200, { "content-type": "application/json", "content-length": "100" });
        res.flushHeaders();
        return;
    }
  };

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    // A client sending through a proxy (etcd-druid with HTTP_PROXY pointing here) asks for the
    // absolute URL; the stand-in answers it as the sidecar that URL names.
    const target = (req.url ?? "").replace(/^https?:\/\/[^/]*/, "");
    const [path = "", query = ""] = target.split(/\?(.*)/s);
    const socket = req.socket;
    const tls = socket instanceof TLSSocket ? socket : undefined;
    const sni = tls !== undefined && typeof tls.servername === "string" ? tls.servername : undefined;
    requests.push({
      method: req.method ?? "",
      path,
      query,
      host: req.headers.host,
      sni,
      tlsVersion: tls?.getProtocol() ?? undefined,
      clientCertificate: tls !== undefined && Object.keys(tls.getPeerCertificate()).length > 0,
      arrivedAt: Date.now(),
    });
    req.resume();
    respond(mode, res);
  };

  const server: Server =
    options.tls === undefined
      ? createHttpServer(handle)
      : createHttpsServer(
          { cert: options.tls.certPem, key: options.tls.keyPem, minVersion: "TLSv1.2" },
          handle,
        );
  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  };
  server.on("connection", track);

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = portOf(server);

  return {
    port,
    requests,
    openConnections: () => sockets.size,
    setMode: (next) => {
      mode = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        for (const socket of sockets) socket.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};

/** A port on 127.0.0.1 with nothing listening (REFUSE): bound once, then released. */
export const refusedPort = async (): Promise<number> => {
  const server = createHttpServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = portOf(server);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
};
