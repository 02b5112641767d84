/**
 * `BackupRestoreHttp` over `node:http`/`node:https`, behaving like druid's Go client (docs/contract.md §9,
 * §10): one fresh connection per call, TLS ≥ 1.2 with the given CA as the only trust anchors, the
 * server verified against the logical host, no client certificate, and one deadline for the whole
 * exchange (connect + handshake + headers + body). Error texts follow Go's `Post "<url>": <reason>`.
 *
 * `resolve` is curl's `--resolve HOST:PORT:ADDRESS`: it changes only where the connection goes. The
 * URL, the `Host` header, the SNI and the certificate check still use HOST, so a test (or a controller
 * running outside the cluster) can reach `<etcd>-client.<ns>.svc` without cluster DNS.
 */
import type { ClientRequest, IncomingMessage } from "node:http";
import { request as httpsRequest, type RequestOptions } from "node:https";
import { isIP, type LookupFunction } from "node:net";
import * as Effect from "effect/Effect";
import * as Layer from "effect/Layer";
import * as Result from "effect/Result";
import { timerDelayMs } from "../advanced.ts";
import { http } from "./node-http.ts";
import { dialLookup, type ResolveOverride } from "./resolve-override.ts";
import {
  BackupRestoreHttp,
  type BackupRestoreHttpShape,
  type BackupRestoreRequest,
  type BackupRestoreResponse,
  HttpError,
} from "./services.ts";

export interface NodeBackupRestoreHttpOptions {
  readonly resolve?: ReadonlyArray<ResolveOverride>;
}

interface Target {
  readonly url: URL;
  /** The URL's host name, an IPv6 address without its brackets. */
  readonly host: string;
  readonly secure: boolean;
  readonly port: number;
  readonly lookup: LookupFunction | undefined;
}

const invalid = (message: string) => new HttpError({ reason: "InvalidRequest", message });

/** Go's text for a transport error: `Post "<url>": <reason>`. */
const postError = (url: string, reason: "Transport" | "Timeout", detail: string) =>
  new HttpError({ reason, message: `Post "${url}": ${detail}` });

// Node's hint to trust the system store does not apply: only the secret's CA is ever trusted.
const systemCaHint = /; if the root CA is installed locally, try running Node\.js with --use-system-ca$/;

const describe = (error: unknown): string => {
  if (!(error instanceof Error)) return String(error);
  const code = "code" in error && typeof error.code === "string" ? error.code : undefined;
  const message = error.message.replace(systemCaHint, "");
  return code === undefined || message.includes(code) ? message : `${message} (${code})`;
};

const targetOf = (
  request: BackupRestoreRequest,
  resolve: ReadonlyArray<ResolveOverride>,
): Effect.Effect<Target, HttpError> =>
  Effect.gen(function* () {
    const url = URL.canParse(request.url) ? new URL(request.url) : undefined;
    if (url === undefined) return yield* invalid(`parse "${request.url}": invalid URL`);
    if (url.protocol !== "http:" && url.protocol !== "https:") {
      return yield* invalid(`unsupported protocol scheme "${url.protocol.replace(/:$/, "")}"`);
    }
    const secure = url.protocol === "https:";
    if (secure && (request.ca === undefined || request.ca.trim() === "")) {
      return yield* invalid("https requires CA certificates; none were given");
    }
    if (!Number.isFinite(request.timeoutMs) || request.timeoutMs <= 0) {
      return yield* invalid(`invalid timeout ${request.timeoutMs} ms`);
    }
    const port = url.port === "" ? (secure ? 443 : 80) : Number(url.port);
    const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
    const lookup = dialLookup(resolve, host, port);
    if (Result.isFailure(lookup)) return yield* invalid(lookup.failure);
    return { url, host, secure, port, lookup: lookup.success };
  });

/**
 * The most of a response body that is read: a delta snapshot's answer is a small JSON document (or
 * `null`); a server that sends more is not backup-restore, and the controller's memory is not its to fill.
 */
export const MaxResponseBodyBytes = 64 * 1024;

/** One request in flight; `close` releases it whatever its state. */
interface Exchange {
  readonly response: Promise<IncomingMessage>;
  readonly readBody: () => Promise<string>;
  readonly close: () => void;
}

const headersTimeout = "context deadline exceeded (Client.Timeout exceeded while awaiting headers)";
const bodyTimeout = "context deadline exceeded (Client.Timeout or context cancellation while reading body)";

/** Starts the request (synchronously; may throw on options Node rejects, which the caller catches). */
const open = (request: BackupRestoreRequest, target: Target): Exchange => {
  const options: RequestOptions = {
    protocol: target.url.protocol,
    hostname: target.host,
    port: target.port,
    path: `${target.url.pathname}${target.url.search}`,
    method: "POST",
    headers: { "content-length": "0" },
    // A fresh connection per call: nothing pooled outlives the call, and the CA is per request.
    agent: false,
    ...(target.lookup === undefined ? {} : { lookup: target.lookup }),
    ...(target.secure && request.ca !== undefined
      ? {
          ca: request.ca,
          // SNI carries host names only (RFC 6066); an IP address is verified against the IP SANs.
          ...(isIP(request.servername) === 0 ? { servername: request.servername } : {}),
          minVersion: "TLSv1.2",
          rejectUnauthorized: true,
        }
      : {}),
  };
  const req: ClientRequest = target.secure ? httpsRequest(options) : http.request(options);
  let res: IncomingMessage | undefined;
  let responseError: unknown;
  let timedOut = false;

  const response = new Promise<IncomingMessage>((resolve, reject) => {
    req.on("response", (incoming) => {
      res = incoming;
      // A destroyed response emits "error"; without a listener that would crash the process.
      incoming.on("error", (error) => {
        responseError ??= error;
      });
      resolve(incoming);
    });
    req.on("error", (error) => {
      reject(
        timedOut
          ? postError(request.url, "Timeout", headersTimeout)
          : postError(request.url, "Transport", describe(error)),
      );
    });
  });
  response.catch(() => undefined);

  const bodyError = (error: unknown) =>
    timedOut
      ? new HttpError({ reason: "Timeout", message: bodyTimeout })
      : new HttpError({ reason: "Transport", message: describe(error) });

  // Read once; later calls share the result.
  let body: Promise<string> | undefined;
  const readBody = () =>
    (body ??= new Promise<string>((resolve, reject) => {
      const incoming = res;
      if (incoming === undefined) return reject(invalid("no response to read"));
      if (incoming.destroyed) return reject(bodyError(responseError ?? new Error("response closed")));
      const chunks: Buffer[] = [];
      let received = 0;
      incoming.on("data", (chunk: Buffer) => {
        received += chunk.length;
        if (received > MaxResponseBodyBytes) {
          const error = new HttpError({
            reason: "Transport",
            message: `Post "${request.url}": response body larger than ${MaxResponseBodyBytes} bytes`,
          });
          reject(error);
          incoming.destroy(error);
          return;
        }
        chunks.push(chunk);
      });
      incoming.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
      incoming.on("error", (error) => reject(bodyError(error)));
      incoming.on("close", () => {
        if (!incoming.complete) reject(bodyError(responseError ?? new Error("unexpected EOF")));
      });
    }));

  req.end();
  // The one deadline of the exchange; after the headers it still bounds the body.
  const timer = setTimeout(() => {
    timedOut = true;
    const error = new Error("request timed out");
    res?.destroy(error);
    req.destroy(error);
  }, timerDelayMs(request.timeoutMs));
  return {
    response,
    readBody,
    close: () => {
      clearTimeout(timer);
      res?.destroy();
      req.destroy();
    },
  };
};

const asHttpError = (url: string) => (error: unknown) =>
  error instanceof HttpError ? error : postError(url, "Transport", describe(error));

export const makeNodeBackupRestoreHttp = (
  options: NodeBackupRestoreHttpOptions = {},
): BackupRestoreHttpShape => {
  const resolve = options.resolve ?? [];
  return BackupRestoreHttp.of({
    post: (request) =>
      Effect.gen(function* () {
        const target = yield* targetOf(request, resolve);
        const exchange = yield* Effect.acquireRelease(
          Effect.try({
            try: () => open(request, target),
            catch: (error) => invalid(describe(error)),
          }),
          (opened) => Effect.sync(opened.close),
        );
        const incoming = yield* Effect.tryPromise({
          try: () => exchange.response,
          catch: asHttpError(request.url),
        });
        const response: BackupRestoreResponse = {
          status: incoming.statusCode ?? 0,
          body: () => Effect.tryPromise({ try: exchange.readBody, catch: asHttpError(request.url) }),
        };
        return response;
      }).pipe(Effect.withSpan("BackupRestoreHttp.post")),
  });
};

/** `BackupRestoreHttp` over Node's HTTP client. */
export const nodeBackupRestoreHttpLayer = (
  options: NodeBackupRestoreHttpOptions = {},
): Layer.Layer<BackupRestoreHttp> => Layer.succeed(BackupRestoreHttp, makeNodeBackupRestoreHttp(options));
