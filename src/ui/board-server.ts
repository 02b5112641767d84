/**
 * The task board's HTTP server (node:http): the page and its two assets, the machine as SVG and JSON,
 * the tasks and schedules as JSON, and a Server-Sent Events stream of their changes (the endpoints:
 * docs/running.md#the-task-board). Every request passes `checkRequest` (board-guard.ts) first; the
 * token comes as `Authorization: Bearer`, never a cookie (docs/design-notes.md §19). SSE viewers are
 * capped (503 beyond `maxViewers`); one that does not read is dropped, not buffered without end.
 */
import { randomBytes } from "node:crypto";
import type { ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { http } from "../node-http.ts";
import { allowedHosts, checkRequest } from "./board-guard.ts";
import type { TaskDetail, TaskSummary } from "./board-records.ts";
import type { BoardSchedules } from "./board-schedules.ts";
import type { BoardStore, ExplainInput } from "./board-store.ts";
import { boardCss, boardHtml } from "./page/board-html.ts";
import { boardScript } from "./page/board-script.ts";

export interface BoardServerOptions {
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  readonly store: BoardStore;
  /** The schedules to list; none shown when absent. */
  readonly schedules?: BoardSchedules;
  readonly explain: (input: ExplainInput, now: number) => string;
  /** What the kind calls an admission group (`etcd`, `house`): a task's detail labels its group so. */
  readonly groupWord?: string;
  readonly machineSvg: () => Promise<string>;
  readonly machine: () => { readonly states: ReadonlyArray<string>; readonly edges: ReadonlyArray<unknown> };
  /** Default: 32 random bytes. */
  readonly token?: string;
  readonly maxViewers?: number;
  /** How long changes are gathered, from the first, before they are sent to viewers (default 200 ms). */
  readonly flushMs?: number;
}

export interface BoardServer {
  /** The page with the token: what to open in a browser. */
  readonly url: string;
  readonly origin: string;
  readonly port: number;
  readonly token: string;
  readonly viewers: () => number;
  readonly stop: () => Promise<void>;
}

/** A viewer's unsent bytes beyond which it is dropped. */
const maxBacklogBytes = 1024 * 1024;

const securityHeaders = {
  "content-security-policy":
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cache-control": "no-store",
} as const;

const send = (response: ServerResponse, status: number, type: string, body: string): void => {
  response.writeHead(status, { ...securityHeaders, "content-type": type });
  response.end(body);
};

interface Reply {
  readonly status: number;
  readonly type: string;
  readonly body: string;
}

const jsonReply = (status: number, value: unknown): Reply => ({
  status,
  type: "application/json; charset=utf-8",
  body: `${JSON.stringify(value)}\n`,
});

const filterTasks = (tasks: ReadonlyArray<TaskSummary>, query: URLSearchParams): TaskSummary[] => {
  const only = (name: string, value: (task: TaskSummary) => string) => {
    const wanted = query.get(name);
    return (task: TaskSummary) => wanted === null || value(task) === wanted;
  };
  const withReleased = query.get("released") === "true";
  return tasks
    .filter((task) => withReleased || !task.released)
    .filter(only("namespace", (task) => task.namespace))
    .filter(only("kind", (task) => task.kind))
    .filter(only("state", (task) => task.state));
};

export const startBoardServer = async (options: BoardServerOptions): Promise<BoardServer> => {
  const { store } = options;
  const token = options.token ?? randomBytes(32).toString("base64url");
  const maxViewers = options.maxViewers ?? 16;
  const viewers = new Set<ServerResponse>();
  const dirty = new Set<string>();
  let svg: Promise<string> | undefined;
  const guard = { hosts: allowedHosts(options.host), token };

  const dirtySchedules = new Set<string>();
  const flush = (): void => {
    if (viewers.size === 0) {
      dirty.clear();
      dirtySchedules.clear();
      return;
    }
    if (dirty.size > 0) {
      const changed = [...dirty].flatMap((uid) => store.summary(uid) ?? []);
      dirty.clear();
      broadcast(`event: tasks\ndata: ${JSON.stringify(changed)}\n\n`);
    }
    if (dirtySchedules.size > 0 && options.schedules !== undefined) {
      const keys = [...dirtySchedules];
      dirtySchedules.clear();
      const changed = keys.flatMap((key) => options.schedules?.summary(key) ?? []);
      const removed = keys.filter((key) => options.schedules?.summary(key) === undefined);
      broadcast(`event: schedules\ndata: ${JSON.stringify({ schedules: changed, removed })}\n\n`);
    }
  };
  const broadcast = (message: string): void => {
    for (const viewer of viewers) {
      viewer.write(message);
      if (viewer.writableLength > maxBacklogBytes) viewer.destroy();
    }
  };
  // Changes are batched for `flushMs` from the first one; with nothing changed no timer runs, so an
  // idle controller with the board on still sleeps (the 15 s ping keeps proxies from closing streams).
  let flushTimer: NodeJS.Timeout | undefined;
  const flushSoon = (): void => {
    flushTimer ??= setTimeout(() => {
      flushTimer = undefined;
      flush();
    }, options.flushMs ?? 200).unref();
  };
  const unsubscribeTasks = store.onChange((uid) => {
    if (viewers.size === 0) return;
    dirty.add(uid);
    flushSoon();
  });
  const unsubscribeSchedules = options.schedules?.onChange((key) => {
    if (viewers.size === 0) return;
    dirtySchedules.add(key);
    flushSoon();
  });
  const unsubscribe = (): void => {
    unsubscribeTasks();
    unsubscribeSchedules?.();
  };
  const pingTimer = setInterval(() => broadcast(": ping\n\n"), 15_000);
  pingTimer.unref();

  const events = (response: ServerResponse): void => {
    if (viewers.size >= maxViewers) {
      send(response, 503, "text/plain; charset=utf-8", `at most ${maxViewers} viewers at once\n`);
      return;
    }
    response.writeHead(200, { ...securityHeaders, "content-type": "text/event-stream; charset=utf-8" });
    response.write(`retry: 2000\nevent: snapshot\ndata: ${JSON.stringify(store.summaries())}\n\n`);
    if (options.schedules !== undefined)
      response.write(
        `event: schedules\ndata: ${JSON.stringify({ schedules: options.schedules.summaries(), removed: [], all: true })}\n\n`,
      );
    viewers.add(response);
    response.on("close", () => viewers.delete(response));
  };

  /** What a path answers; the event stream answers itself. */
  const route = async (url: URL): Promise<Reply | "events"> => {
    const path = url.pathname;
    if (path === "/") return { status: 200, type: "text/html; charset=utf-8", body: boardHtml };
    if (path === "/board.js")
      return { status: 200, type: "text/javascript; charset=utf-8", body: boardScript };
    if (path === "/favicon.ico") return { status: 204, type: "image/x-icon", body: "" };
    if (path === "/board.css") return { status: 200, type: "text/css; charset=utf-8", body: boardCss };
    if (path === "/api/machine") return jsonReply(200, { ...options.machine(), counts: store.counts() });
    if (path === "/api/machine.svg") {
      svg ??= options.machineSvg();
      return { status: 200, type: "image/svg+xml", body: await svg };
    }
    if (path === "/api/tasks")
      return jsonReply(200, {
        tasks: filterTasks(store.summaries(), url.searchParams),
        counts: store.counts(),
        memory: { tasks: store.size, bytes: store.bytes },
      });
    if (path === "/api/schedules") return jsonReply(200, { schedules: options.schedules?.summaries() ?? [] });
    const one = /^\/api\/tasks\/([^/]+)\/([^/]+)$/.exec(path);
    if (one !== null) {
      const key = `${decodeURIComponent(one[1] ?? "")}/${decodeURIComponent(one[2] ?? "")}`;
      const detail: TaskDetail | undefined = store.detail(key, options.explain, Date.now());
      return detail === undefined
        ? jsonReply(404, { error: `no task ${key} on this board` })
        : jsonReply(200, { ...detail, groupWord: options.groupWord ?? "group" });
    }
    if (path === "/api/events") return "events";
    return { status: 404, type: "text/plain; charset=utf-8", body: "not found\n" };
  };

  const server = http.createServer((request, response) => {
    const verdict = checkRequest(guard, {
      method: request.method ?? "",
      url: request.url ?? "/",
      headers: request.headers,
    });
    switch (verdict._tag) {
      case "refuse":
        return send(response, verdict.status, "text/plain; charset=utf-8", `${verdict.reason}\n`);
      case "allow":
        route(new URL(request.url ?? "/", "http://board")).then(
          (reply) =>
            reply === "events" ? events(response) : send(response, reply.status, reply.type, reply.body),
          (error: unknown) =>
            send(
              response,
              500,
              "text/plain; charset=utf-8",
              `${error instanceof Error ? error.message : String(error)}\n`,
            ),
        );
    }
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  }).catch((error: unknown) => {
    clearTimeout(flushTimer);
    clearInterval(pingTimer);
    unsubscribe();
    throw error;
  });
  const { port } = server.address() as AddressInfo; // a TCP listener's address is an AddressInfo
  const shownHost =
    options.host === "0.0.0.0" || options.host === "::"
      ? "127.0.0.1"
      : options.host.includes(":")
        ? `[${options.host}]`
        : options.host;
  const origin = `http://${shownHost}:${port}`;
  let stopping: Promise<void> | undefined;
  return {
    url: `${origin}/?token=${token}`,
    origin,
    port,
    token,
    viewers: () => viewers.size,
    stop: () => {
      stopping ??= new Promise<void>((resolve) => {
        clearTimeout(flushTimer);
        clearInterval(pingTimer);
        unsubscribe();
        for (const viewer of viewers) viewer.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return stopping;
    },
  };
};
