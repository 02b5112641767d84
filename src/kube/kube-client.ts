/**
 * The controller's HTTP client for the kube-apiserver: JSON requests and watch streams over `node:https`
 * with keep-alive connection pools per TLS identity (requests share a few connections; each watch has
 * its own).
 *
 * Hand-written rather than client-node's (docs/design-notes.md §15). What client-node knows beyond
 * verbs, paths, TLS and a bearer token (exec and auth-provider credentials, merged kubeconfigs) stays
 * available: `kubeClientOf(kubeConfig)` sends through a client-node `KubeConfig`'s own authentication,
 * and `loadKubeClient` falls back to it for such kubeconfigs.
 */
import type * as Http from "node:http";
import https from "node:https";
import { createInterface } from "node:readline";
import { http } from "../node-http.ts";
import { apiPathProblem } from "./api-path.ts";

/** TLS settings and headers for the next request; asked before each (tokens rotate, credentials expire). */
export interface Credentials {
  readonly ca?: Buffer | undefined;
  readonly cert?: Buffer | undefined;
  readonly key?: Buffer | undefined;
  readonly rejectUnauthorized?: boolean | undefined;
  readonly servername?: string | undefined;
  readonly headers: Readonly<Record<string, string>>;
}

export interface KubeClientSource {
  /** The apiserver's base URL, e.g. `https://198.19.0.1:443` (a path prefix is kept). */
  readonly server: string;
  readonly credentials: () => Promise<Credentials>;
  /**
   * Who writes: sent as `fieldManager` on every POST, PATCH and PUT that does not name one itself, so
   * that `metadata.managedFields` tells the controller's writes (default `opstask`) from the CLI's
   * (`opstask-cli`) and from a user's `kubectl` edits. controller-runtime's `client.WithFieldOwner`
   * does the same for Go controllers.
   */
  readonly fieldManager?: string;
}

/** The field manager of the controller's writes. */
export const controllerFieldManager = "opstask";
/** The field manager of the task CLI's writes (`opstask snapshot`, `opstask delete` …). */
export const cliFieldManager = "opstask-cli";

const writes: ReadonlySet<ApiRequest["method"]> = new Set(["POST", "PATCH", "PUT"]);

/**
 * Connections to the apiserver that requests (not watches) share; a request beyond them waits for a
 * free one. Uncapped, Node's agent opens one per request in flight and keeps it: a burst left dozens
 * of TLS connections, each holding malloc'd memory that stays resident after it closes (bench/PROFILE.md).
 * Enough for the passes, the Event senders and the history writer at once; client-go multiplexes
 * everything over one HTTP/2 connection.
 */
export const maxRequestConnections = 8;

export interface ApiRequest {
  readonly method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE";
  /** Absolute API path, e.g. `/apis/druid.gardener.cloud/v1alpha1/namespaces/ns/etcdopstasks/x`. */
  readonly path: string;
  readonly query?: Readonly<Record<string, string | number | boolean | undefined>>;
  readonly body?: unknown;
  /** Default `application/json`; merge patches say `application/merge-patch+json`. */
  readonly contentType?: string;
  /**
   * Stop reading a successful answer longer than this many bytes (default: read it whole): the
   * answer then has no `body`, only `cutAt`. For LIST pages, whose size the caller can bound.
   */
  readonly maxAnswerBytes?: number;
}

export interface ApiResponse {
  readonly status: number;
  /** The parsed JSON body (a `Status` on errors), or the raw text when it is not JSON. */
  readonly body: unknown;
  /** The length of the answer's body in bytes, when it was read whole. */
  readonly bytes?: number;
  /** Set when the answer was longer than `maxAnswerBytes`: the bytes read before reading stopped. */
  readonly cutAt?: number;
}

/** A non-2xx answer or a failure before one arrived (`statusCode` 0). */
export class ApiCallError extends Error {
  readonly statusCode: number;
  readonly body: unknown;
  constructor(statusCode: number, message: string, body?: unknown, options?: ErrorOptions) {
    super(message, options);
    this.name = "ApiCallError";
    this.statusCode = statusCode;
    this.body = body;
  }
}

export interface KubeClient {
  readonly _tag: "KubeClient";
  readonly server: string;
  /**
   * One request; rejects with `ApiCallError` for any answer outside 2xx and for transport failures,
   * and with `InvalidPathName`, sending nothing, for a path whose names are not valid (api-path.ts).
   */
  readonly request: (request: ApiRequest, signal?: AbortSignal) => Promise<ApiResponse>;
  /**
   * A watch: `onEvent` for each event line, then `onDone` once (null: the server closed the stream).
   * Resolves when the server answered 200, with the controller that ends the watch.
   */
  readonly watch: (
    path: string,
    query: ApiRequest["query"],
    onEvent: (type: string, object: unknown) => void,
    onDone: (error: unknown) => void,
  ) => Promise<AbortController>;
  /** Closes idle kept-alive connections (the process can exit without waiting for them). */
  readonly close: () => void;
}

export const isKubeClient = (value: unknown): value is KubeClient =>
  typeof value === "object" && value !== null && Reflect.get(value, "_tag") === "KubeClient";

const queryString = (query: ApiRequest["query"]): string => {
  if (query === undefined) return "";
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined) params.set(name, String(value));
  const text = params.toString();
  return text === "" ? "" : `?${text}`;
};

/** The `message` of a `Status` body, else the start of the text. */
const statusMessage = (body: unknown, status: number): string => {
  if (typeof body === "object" && body !== null) {
    const message: unknown = Reflect.get(body, "message");
    if (typeof message === "string") return message;
  }
  if (typeof body === "string" && body.trim() !== "") return body.slice(0, 1000);
  return `HTTP ${status}`;
};

const parseBody = (text: string): unknown => {
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

/** Takes a response's errors once its answer is read: it captures nothing, so it keeps nothing reachable. */
const ignoreLateError = (): void => {};

/** An answer read whole, or how far it was read before it grew past its bound. */
type Answer = { readonly text: string; readonly bytes: number } | { readonly cutAt: number };

/**
 * The whole answer as text. Our listeners come off the response once it is read: the request's abort
 * signal keeps the response reachable, and a listener left on it would keep the text (a whole LIST
 * page) in memory until the next request.
 */
export const readText = async (response: Http.IncomingMessage): Promise<string> => {
  const answer = await readAnswer(response);
  return "text" in answer ? answer.text : "";
};

/**
 * The answer as text, or, once more than `maxBytes` arrived, nothing: the response is destroyed there
 * (its connection with it) and the chunks read so far are dropped.
 */
const readAnswer = (response: Http.IncomingMessage, maxBytes = Number.POSITIVE_INFINITY): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    const cut = (reason: string) => new ApiCallError(0, `reading the answer: ${reason}`);
    const onData = (chunk: Buffer): void => {
      bytes += chunk.length;
      if (bytes <= maxBytes) {
        chunks.push(chunk);
        return;
      }
      chunks.length = 0;
      done(() => resolve({ cutAt: bytes }));
      response.destroy();
    };
    const onEnd = (): void =>
      done(() => resolve({ text: Buffer.concat(chunks, bytes).toString("utf8"), bytes }));
    const onError = (error: Error): void => done(() => reject(cut(error.message)));
    // A connection that closes mid-body may end the stream with neither "end" nor "error".
    const onClose = (): void => {
      if (!response.complete) done(() => reject(cut("the connection closed before the answer was complete")));
    };
    const done = (settle: () => void): void => {
      response.off("data", onData).off("end", onEnd).off("error", onError).off("close", onClose);
      response.on("error", ignoreLateError);
      settle();
    };
    response.on("data", onData).once("end", onEnd).on("error", onError).once("close", onClose);
  });

/** The errors of a request sent on a connection the other side had already closed. */
const isStaleConnection = (error: Error): boolean => {
  const code: unknown = Reflect.get(error, "code");
  return code === "ECONNRESET" || code === "EPIPE";
};

const credentialKey = (server: string, c: Credentials): string =>
  [
    server,
    c.ca?.toString("base64"),
    c.cert?.toString("base64"),
    c.key?.toString("base64"),
    c.rejectUnauthorized,
    c.servername,
  ]
    .map((part) => (part === undefined ? "-" : String(part)))
    .join("\0");

export const makeKubeClient = (source: KubeClientSource): KubeClient => {
  const base = new URL(source.server.endsWith("/") ? source.server : `${source.server}/`);
  const secure = base.protocol === "https:";
  const prefix = base.pathname.replace(/\/$/, "");
  const fieldManager = source.fieldManager ?? controllerFieldManager;
  // One pool per TLS identity: a rotated client certificate gets fresh connections, the old pool drains.
  // Requests share at most `maxRequestConnections` connections (more wait for a free one); each watch
  // holds one of its own pool for its lifetime, so watches never wait behind requests nor starve them.
  let pools:
    | { readonly key: string; readonly requests: Http.Agent; readonly watches: Http.Agent }
    | undefined;
  const agentFor = (credentials: Credentials, purpose: "request" | "watch"): Http.Agent => {
    const key = credentialKey(source.server, credentials);
    if (pools?.key !== key) {
      pools?.requests.destroy();
      pools?.watches.destroy();
      const make = (maxSockets: number): Http.Agent =>
        secure
          ? new https.Agent({
              keepAlive: true,
              maxSockets,
              ...(credentials.ca === undefined ? {} : { ca: credentials.ca }),
              ...(credentials.cert === undefined ? {} : { cert: credentials.cert }),
              ...(credentials.key === undefined ? {} : { key: credentials.key }),
              ...(credentials.rejectUnauthorized === undefined
                ? {}
                : { rejectUnauthorized: credentials.rejectUnauthorized }),
              ...(credentials.servername === undefined ? {} : { servername: credentials.servername }),
            })
          : new http.Agent({ keepAlive: true, maxSockets });
      pools = { key, requests: make(maxRequestConnections), watches: make(Number.POSITIVE_INFINITY) };
    }
    return purpose === "watch" ? pools.watches : pools.requests;
  };

  /** Sends a request; resolves with the response once its headers arrived. */
  const send = async (
    request: ApiRequest,
    signal: AbortSignal | undefined,
    purpose: "request" | "watch" = "request",
  ): Promise<Http.IncomingMessage> => {
    const credentials = await source.credentials();
    signal?.throwIfAborted();
    const payload =
      request.body === undefined
        ? undefined
        : Buffer.from(typeof request.body === "string" ? request.body : JSON.stringify(request.body));
    const headers: Record<string, string> = {
      Accept: "application/json",
      ...credentials.headers,
      ...(payload === undefined
        ? {}
        : {
            "Content-Type": request.contentType ?? "application/json",
            "Content-Length": String(payload.length),
          }),
    };
    const query =
      writes.has(request.method) && request.query?.fieldManager === undefined
        ? { ...request.query, fieldManager }
        : request.query;
    const url = new URL(`${prefix}${request.path}${queryString(query)}`, base);
    const transport = secure ? https : http;
    const attempt = (retried: boolean): Promise<Http.IncomingMessage> =>
      new Promise((resolve, reject) => {
        let answered = false;
        const outgoing = transport.request(url, {
          method: request.method,
          headers,
          agent: agentFor(credentials, purpose),
          ...(signal === undefined ? {} : { signal }),
        });
        outgoing.once("response", (response) => {
          answered = true;
          resolve(response);
        });
        outgoing.on("error", (error) => {
          if (answered) return;
          // A kept-alive connection the server closed just as we sent on it (its idle timeout): the
          // request goes once more, on a new connection, as Go's transport does for client-go. Every
          // request opstask sends is safe to repeat: reads; writes guarded by a resourceVersion or UID
          // precondition, or idempotent (a status patch's field adds); creates whose repeat is a 409
          // the caller expects (Jobs) or a harmless second Event.
          if (!retried && outgoing.reusedSocket && isStaleConnection(error) && signal?.aborted !== true) {
            resolve(attempt(true));
            return;
          }
          reject(
            new ApiCallError(0, `${request.method} ${request.path}: ${error.message}`, undefined, {
              cause: error,
            }),
          );
        });
        outgoing.end(payload);
      });
    return attempt(false);
  };

  const failure = async (response: Http.IncomingMessage): Promise<ApiCallError> => {
    const status = response.statusCode ?? 0;
    const body = parseBody(await readText(response).catch(() => ""));
    return new ApiCallError(status, statusMessage(body, status), body);
  };

  return {
    _tag: "KubeClient",
    server: source.server,
    request: async (request, signal) => {
      const invalid = apiPathProblem(request.path);
      if (invalid !== undefined) throw invalid;
      const response = await send(request, signal);
      const status = response.statusCode ?? 0;
      if (status < 200 || status > 299) throw await failure(response);
      const answer = await readAnswer(response, request.maxAnswerBytes);
      return "text" in answer
        ? { status, body: parseBody(answer.text), bytes: answer.bytes }
        : { status, body: undefined, cutAt: answer.cutAt };
    },
    watch: async (path, query, onEvent, onDone) => {
      const invalid = apiPathProblem(path);
      if (invalid !== undefined) throw invalid;
      const controller = new AbortController();
      const response = await send(
        { method: "GET", path, query: { ...query, watch: true } },
        controller.signal,
        "watch",
      );
      const status = response.statusCode ?? 0;
      if (status !== 200) throw await failure(response);
      let done = false;
      const finish = (error: unknown) => {
        if (done) return;
        done = true;
        lines.close();
        onDone(error);
      };
      // Once the whole answer is in, its kept-alive socket may already serve another request: aborting
      // then would destroy that socket, which has no error listener (an uncaught AbortError). The rest
      // of a complete answer is read to its end instead.
      const abort = (): void => {
        if (!response.complete) controller.abort();
      };
      // One event per line, each at most one object (the apiserver's bound on an object, ~1.5 MiB by
      // default). readline keeps only the unfinished line and hands each finished one over at once;
      // the listener parses it and the caller keeps its own bounded copy before the next, so no more
      // than one event's text and parse are held at a time, however many arrive.
      const lines = createInterface({ input: response, crlfDelay: Number.POSITIVE_INFINITY });
      lines.on("line", (line) => {
        if (done || line.trim() === "") return;
        let event: unknown;
        try {
          event = JSON.parse(line);
        } catch (error) {
          finish(
            new ApiCallError(
              0,
              `watch ${path}: an event that is not JSON: ${line.slice(0, 200)}`,
              undefined,
              { cause: error },
            ),
          );
          abort();
          return;
        }
        const type: unknown =
          typeof event === "object" && event !== null ? Reflect.get(event, "type") : undefined;
        const object: unknown =
          typeof event === "object" && event !== null ? Reflect.get(event, "object") : undefined;
        onEvent(typeof type === "string" ? type : "", object);
      });
      // readline re-emits its input's errors (a reset connection: "aborted") on the interface.
      lines.on("error", (error) => finish(controller.signal.aborted ? null : error));
      response.once("end", () => finish(null));
      response.on("error", (error) => finish(controller.signal.aborted ? null : error));
      response.once("close", () =>
        finish(controller.signal.aborted ? null : new ApiCallError(0, `watch ${path}: connection closed`)),
      );
      const handle = new AbortController();
      handle.signal.addEventListener("abort", abort, { once: true });
      return handle;
    },
    close: () => {
      pools?.requests.destroy();
      pools?.watches.destroy();
      pools = undefined;
    },
  };
};
