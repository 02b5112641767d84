/**
 * A scripted stand-in for etcd's JSON gateway on 127.0.0.1, for the answers a healthy single etcd does
 * not give (errors, hangs, several members). Each path answers with what the test's route returns
 * (default: a healthy single member at revision 42); every request is recorded with its Host header.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";

type Json = Record<string, unknown>;

export interface RecordedCall {
  readonly path: string;
  readonly host: string | undefined;
  readonly body: Json;
}

/** An answer, or "hang": never answer (the socket is closed when the server stops). */
export type Reply = { readonly status: number; readonly body: Json } | "hang";
export type Route = (call: RecordedCall) => Reply;

export interface FakeGateway {
  readonly port: number;
  readonly calls: ReadonlyArray<RecordedCall>;
  readonly close: () => Promise<void>;
}

export const ok = (body: Json): Reply => ({ status: 200, body });
export const etcdError = (status: number, code: number, message: string): Reply => ({
  status,
  body: { code, message },
});

const header = { cluster_id: "1", member_id: "11", revision: "42", raft_term: "2" };

export const defaultRoutes: Readonly<Record<string, Route>> = {
  "/v3/maintenance/status": () => ok({ header, version: "3.6.5", dbSize: "2097152", dbSizeInUse: "1048576" }),
  "/v3/kv/range": () => ok({ header }),
  "/v3/kv/compaction": () => ok({ header }),
  "/v3/maintenance/defragment": () => ok({}),
  "/v3/cluster/member/list": () =>
    ok({
      header,
      members: [{ ID: "11", name: "test-etcd-0", clientURLs: ["http://test-etcd-0.invalid:2379"] }],
    }),
};

const isJson = (value: unknown): value is Json => typeof value === "object" && value !== null;

const readBody = (req: IncomingMessage): Promise<Json> =>
  new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      try {
        const parsed: unknown = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        resolve(isJson(parsed) ? parsed : {});
      } catch {
        resolve({});
      }
    });
  });

export const startFakeGateway = async (
  routes: Readonly<Record<string, Route>> = {},
): Promise<FakeGateway> => {
  const calls: RecordedCall[] = [];
  const sockets = new Set<Socket>();
  const table = { ...defaultRoutes, ...routes };
  const server: Server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const call: RecordedCall = { path: req.url ?? "", host: req.headers.host, body: await readBody(req) };
    calls.push(call);
    const route = table[call.path];
    const reply: Reply =
      route === undefined ? { status: 404, body: { code: 5, message: "Not Found" } } : route(call);
    if (reply === "hang") return;
    res.writeHead(reply.status, { "content-type": "application/json" });
    res.end(JSON.stringify(reply.body));
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return {
    port,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
};
