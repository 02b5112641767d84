import { createServer, get, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createNetServer } from "node:net";
import { Cause, Effect, Exit, Fiber } from "effect";
import { afterEach, describe, expect, it } from "vitest";
import { kubeRequest } from "../../src/kube/client.ts";
import { toKubeError } from "../../src/kube/errors.ts";
import {
  ApiCallError,
  type KubeClient,
  makeKubeClient,
  maxRequestConnections,
  readText,
} from "../../src/kube/kube-client.ts";
import { RequestCounter } from "../../src/kube/request-metrics.ts";

interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage["headers"];
  readonly body: string;
}

let server: Server | undefined;
let client: KubeClient | undefined;

afterEach(async () => {
  client?.close();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
  client = undefined;
});

/** A plain-HTTP apiserver stand-in on 127.0.0.1; `handle` answers each request. */
const serve = async (handle: (request: Seen, response: ServerResponse) => void) => {
  const seen: Seen[] = [];
  server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const entry = {
        method: request.method ?? "",
        url: request.url ?? "",
        headers: request.headers,
        body: Buffer.concat(chunks).toString(),
      };
      seen.push(entry);
      handle(entry, response);
    });
  });
  await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  client = makeKubeClient({
    server: `http://127.0.0.1:${port}/prefix`,
    credentials: async () => ({ headers: { Authorization: "Bearer t" } }),
  });
  return { client, seen };
};

const json = (response: ServerResponse, status: number, body: unknown) =>
  response.writeHead(status, { "Content-Type": "application/json" }).end(JSON.stringify(body));

describe("KubeClient.request", () => {
  it("sends method, path under the server's prefix, query, JSON body, content type and credentials", async () => {
    const { client, seen } = await serve((_, response) => json(response, 200, { kind: "Thing" }));
    const answer = await client.request({
      method: "PATCH",
      path: "/apis/g/v1/namespaces/n/things/a",
      query: { labelSelector: "app=x", limit: 5, continue: undefined },
      body: { metadata: { resourceVersion: "7" } },
      contentType: "application/merge-patch+json",
    });
    expect(answer).toEqual({ status: 200, body: { kind: "Thing" }, bytes: 16 });
    expect(seen[0]?.method).toBe("PATCH");
    expect(seen[0]?.url).toBe(
      "/prefix/apis/g/v1/namespaces/n/things/a?labelSelector=app%3Dx&limit=5&fieldManager=opstask",
    );
    expect(seen[0]?.headers["content-type"]).toBe("application/merge-patch+json");
    expect(seen[0]?.headers.authorization).toBe("Bearer t");
    expect(JSON.parse(seen[0]?.body ?? "")).toEqual({ metadata: { resourceVersion: "7" } });
  });

  it("rejects a non-2xx answer with its code and the Status message, which map to a KubeError", async () => {
    const { client } = await serve((_, response) =>
      json(response, 409, {
        kind: "Status",
        code: 409,
        reason: "Conflict",
        message: "the object has been modified",
      }),
    );
    const error = await client.request({ method: "GET", path: "/api/v1/x" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiCallError);
    expect(toKubeError(error)).toMatchObject({
      reason: "Conflict",
      code: 409,
      message: "the object has been modified",
    });
  });

  it("fails as transient (code 0) when the connection closes mid-answer or nothing listens", async () => {
    const { client } = await serve((_, response) => {
      response.writeHead(200, { "Content-Type": "application/json", "Content-Length": "100" });
      response.write('{"kind":');
      setTimeout(() => response.socket?.destroy(), 20);
    });
    const cut = await client.request({ method: "GET", path: "/api/v1/x" }).catch((e: unknown) => e);
    expect(toKubeError(cut)).toMatchObject({ reason: "Transient", code: 0 });
    const nobody = makeKubeClient({
      server: "http://127.0.0.1:1",
      credentials: async () => ({ headers: {} }),
    });
    const refused = await nobody.request({ method: "GET", path: "/api/v1/x" }).catch((e: unknown) => e);
    expect(toKubeError(refused)).toMatchObject({ reason: "Transient", code: 0 });
    expect(toKubeError(refused).message).toMatch(/ECONNREFUSED/);
  });

  it("reads a whole answer and leaves no listener on it to keep its text reachable", async () => {
    const body = JSON.stringify({ items: Array.from({ length: 200 }, (_, i) => ({ name: `item-${i}` })) });
    await serve((_, response) => {
      response.writeHead(200, { "Content-Type": "application/json" });
      // In several chunks, as a LIST page arrives.
      response.write(body.slice(0, 1000));
      setTimeout(() => response.end(body.slice(1000)), 10);
    });
    const address = server?.address();
    const port = typeof address === "object" && address !== null ? address.port : 0;
    const response = await new Promise<IncomingMessage>((resolve) =>
      get(`http://127.0.0.1:${port}/x`, resolve),
    );
    const events = ["data", "end", "close"];
    const before = events.map((event) => [event, response.listenerCount(event)]);
    const errorsBefore = response.listeners("error");
    expect(await readText(response)).toBe(body);
    // A request's abort signal keeps its response reachable; a listener of ours left on the response
    // kept the text (the last LIST page, for as long as the next one took). Node's own may stay, and
    // one that takes late errors and captures nothing.
    expect(events.map((event) => [event, response.listenerCount(event)])).toEqual(before);
    const added = response.listeners("error").filter((listener) => !errorsBefore.includes(listener));
    expect(added.map((listener) => listener.name)).toEqual(["ignoreLateError"]);
  });

  it("stops reading an answer past maxAnswerBytes, drops what it read, and reads the next request whole", async () => {
    let written = 0;
    const { client } = await serve((request, response) => {
      response.writeHead(200, { "Content-Type": "application/json" });
      if (request.url.includes("small")) return void response.end(JSON.stringify({ items: [] }));
      // A page that would never end: the client must stop reading it, not wait for its end.
      const chunk = `"${"x".repeat(64 * 1024)}",`;
      response.write('{"items":[');
      const more = (): void => {
        if (response.destroyed || written > 64 * 1024 * 1024) return void response.end("]}");
        written += chunk.length;
        if (response.write(chunk)) setImmediate(more);
        else response.once("drain", more);
      };
      more();
    });
    const cut = await client.request({ method: "GET", path: "/big", maxAnswerBytes: 1024 * 1024 });
    expect(cut.body).toBeUndefined();
    expect(cut.cutAt).toBeGreaterThan(1024 * 1024);
    expect(cut.cutAt).toBeLessThan(2 * 1024 * 1024);
    // The server saw the connection go: it stopped writing long before its 64 MiB.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(written).toBeLessThan(16 * 1024 * 1024);
    const next = await client.request({ method: "GET", path: "/small", maxAnswerBytes: 1024 * 1024 });
    expect(next).toEqual({ status: 200, body: { items: [] }, bytes: 12 });
  });

  it("an aborted request rejects", async () => {
    const { client } = await serve(() => {
      // never answers
    });
    const abort = new AbortController();
    const pending = client.request({ method: "GET", path: "/api/v1/x" }, abort.signal);
    setTimeout(() => abort.abort(), 20);
    await expect(pending).rejects.toBeInstanceOf(Error);
  });
});

describe("KubeClient.watch", () => {
  it("delivers each event line, then onDone(null) when the server ends the stream", async () => {
    const { client, seen } = await serve((_, response) => {
      response.writeHead(200, { "Content-Type": "application/json" });
      response.write('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n{"type":"BOOK');
      setTimeout(() => {
        response.write('MARK","object":{"metadata":{"resourceVersion":"9"}}}\n\n');
        response.end();
      }, 20);
    });
    const events: Array<[string, unknown]> = [];
    const done = new Promise<unknown>((resolve) => {
      void client.watch(
        "/apis/g/v1/things",
        { resourceVersion: "5" },
        (type, object) => events.push([type, object]),
        resolve,
      );
    });
    expect(await done).toBeNull();
    expect(events).toEqual([
      ["ADDED", { metadata: { name: "a" } }],
      ["BOOKMARK", { metadata: { resourceVersion: "9" } }],
    ]);
    expect(seen[0]?.url).toBe("/prefix/apis/g/v1/things?resourceVersion=5&watch=true");
  });

  it("rejects when the watch is refused (410 Gone keeps its code)", async () => {
    const { client } = await serve((_, response) =>
      json(response, 410, {
        kind: "Status",
        code: 410,
        reason: "Expired",
        message: "too old resource version",
      }),
    );
    const error = await client
      .watch(
        "/apis/g/v1/things",
        {},
        () => {},
        () => {},
      )
      .catch((e: unknown) => e);
    expect(toKubeError(error)).toMatchObject({
      reason: "Gone",
      code: 410,
      message: "too old resource version",
    });
  });

  it("ends once with an error when the connection drops, and not at all after our own abort", async () => {
    const { client } = await serve((_, response) => {
      response.writeHead(200, { "Content-Type": "application/json" });
      response.write('{"type":"ADDED","object":{}}\n');
      setTimeout(() => response.socket?.destroy(), 20);
    });
    const ends: unknown[] = [];
    await new Promise<void>((resolve) => {
      void client.watch(
        "/w",
        {},
        () => {},
        (error) => {
          ends.push(error);
          resolve();
        },
      );
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(ends).toHaveLength(1);
    expect(ends[0]).toBeInstanceOf(Error);

    const aborted: unknown[] = [];
    const controller = await client.watch(
      "/w",
      {},
      () => {},
      (error) => aborted.push(error),
    );
    controller.abort();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(aborted.every((end) => end === null)).toBe(true);
  });
});

describe("KubeClient.watch aborted on its last event", () => {
  it("an abort when the whole answer is in (an ERROR event, then the end) raises no uncaught error", async () => {
    const { client } = await serve((_, response) => {
      response.writeHead(200, { "Content-Type": "application/json" });
      response.end('{"type":"ERROR","object":{"kind":"Status","code":410}}\n');
    });
    const uncaught: unknown[] = [];
    const keep = (error: unknown) => uncaught.push(error);
    process.on("uncaughtException", keep);
    try {
      const ends: unknown[] = [];
      await new Promise<void>((resolve) => {
        let controller: AbortController | undefined;
        const started = client.watch(
          "/w",
          {},
          () => controller?.abort(), // as the informer does on an ERROR event
          (error) => {
            ends.push(error);
            resolve();
          },
        );
        void started.then((c) => {
          controller = c;
        });
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(uncaught).toEqual([]);
      expect(ends).toEqual([null]);
    } finally {
      process.off("uncaughtException", keep);
    }
  });
});

describe("KubeClient on a kept-alive connection the server has closed", () => {
  it("sends the request once more on a new connection", async () => {
    // A raw server: answers the first request of each connection and keeps it open; on the second
    // request of a connection it drops the connection unanswered, as a server whose idle timeout fired.
    const connections: number[] = [];
    const raw = createNetServer((socket) => {
      const index = connections.length;
      connections.push(0);
      socket.on("data", () => {
        connections[index] = (connections[index] ?? 0) + 1;
        if ((connections[index] ?? 0) > 1) {
          socket.resetAndDestroy();
          return;
        }
        const body = `{"n":${index}}`;
        socket.write(
          `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: keep-alive\r\n\r\n${body}`,
        );
      });
    });
    await new Promise<void>((resolve) => raw.listen(0, "127.0.0.1", resolve));
    const address = raw.address();
    const port = typeof address === "object" && address !== null ? address.port : 0;
    const kept = makeKubeClient({
      server: `http://127.0.0.1:${port}`,
      credentials: async () => ({ headers: {} }),
    });
    try {
      expect((await kept.request({ method: "GET", path: "/a" })).body).toEqual({ n: 0 });
      // Reuses the kept-alive socket, which the server resets: answered by a new connection.
      expect((await kept.request({ method: "GET", path: "/b" })).body).toEqual({ n: 1 });
      expect(connections).toEqual([2, 1]);
    } finally {
      kept.close();
      await new Promise((resolve) => raw.close(resolve));
    }
  });
});

describe("KubeClient's connections", () => {
  it("shares at most maxRequestConnections among requests, and gives each watch its own", async () => {
    const watches: ServerResponse[] = [];
    const { client } = await serve((request, response) => {
      if (request.url.includes("watch=true")) {
        // A watch stays open until the test ends.
        response.writeHead(200, { "Content-Type": "application/json" });
        response.write("\n");
        watches.push(response);
        return;
      }
      setTimeout(() => json(response, 200, { url: request.url }), 20);
    });
    const sockets = new Set<unknown>();
    server?.on("connection", (socket) => sockets.add(socket));
    const burst = 3 * maxRequestConnections;
    const answers = await Promise.all(
      Array.from({ length: burst }, (_, i) => client.request({ method: "GET", path: `/api/v1/things/${i}` })),
    );
    expect(answers.map((answer) => answer.status)).toEqual(Array.from({ length: burst }, () => 200));
    expect(sockets.size).toBeLessThanOrEqual(maxRequestConnections);
    // More watches than request connections: requests are still answered beside them.
    const handles = await Promise.all(
      Array.from({ length: maxRequestConnections + 2 }, () =>
        client.watch(
          "/api/v1/things",
          {},
          () => undefined,
          () => undefined,
        ),
      ),
    );
    expect((await client.request({ method: "GET", path: "/api/v1/things/after" })).status).toBe(200);
    expect(watches).toHaveLength(maxRequestConnections + 2);
    for (const handle of handles) handle.abort();
  });
});

describe("kubeRequest", () => {
  /** A server that never answers, and a promise of the moment it sees its client go away. */
  const hanging = async () => {
    let closed!: () => void;
    const gone = new Promise<void>((resolve) => {
      closed = resolve;
    });
    const { client } = await serve((_, response) => response.on("close", closed));
    return { client, gone };
  };

  it("fails as transient once its timeout passed, and the request is aborted", async () => {
    const { client, gone } = await hanging();
    const counter = new RequestCounter();
    const started = Date.now();
    const exit = await Effect.runPromiseExit(
      kubeRequest({ counter, timeout: "150 millis" }, "get", client, { method: "GET", path: "/api/v1/x" }),
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(Exit.isFailure(exit) && Cause.squash(exit.cause)).toMatchObject({
      reason: "Transient",
      code: 0,
      message: "get request timed out",
    });
    await gone;
    expect(counter.count("get", 0)).toBe(1);
  });

  it("is aborted when its fiber is interrupted, and counts no answer", async () => {
    const { client, gone } = await hanging();
    const counter = new RequestCounter();
    const fiber = Effect.runFork(
      kubeRequest({ counter, timeout: "1 minute" }, "get", client, { method: "GET", path: "/api/v1/x" }),
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    await Effect.runPromise(Fiber.interrupt(fiber));
    await gone;
    expect(counter.count("get")).toBe(0);
  });

  it("answers as the server did, well within its timeout", async () => {
    const { client } = await serve((_, response) => json(response, 200, { kind: "X" }));
    const counter = new RequestCounter();
    const response = await Effect.runPromise(
      kubeRequest({ counter, timeout: "5 seconds" }, "get", client, { method: "GET", path: "/api/v1/x" }),
    );
    expect(response.body).toEqual({ kind: "X" });
    expect(counter.count("get", 200)).toBe(1);
  });
});
