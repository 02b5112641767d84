/**
 * `EtcdGateway`: the few etcd v3 calls the maintenance handler makes, over etcd's JSON gateway
 * (`POST /v3/...` on the client port, gRPC-gateway encoding: int64 as strings, bytes as base64).
 *
 * Each call is one fresh connection (nothing pooled outlives it) bounded by one deadline for the whole
 * exchange, as the backup-restore client does. `https:` endpoints verify the server against the URL's
 * host with the given CA as the only trust anchors, and present a client certificate when one is given
 * (druid's etcd runs with `client-cert-auth`).
 *
 * Dialling honours the controller's curl-style `--resolve HOST:PORT:ADDRESS` rules (resolve-override.ts,
 * shared with the backup-restore client): only where the connection goes changes; the URL, `Host`, SNI
 * and certificate check keep HOST.
 *
 * An answer other than 200 is etcd's error (`{"code": <gRPC code>, "message": "etcdserver: ..."}`); its
 * message is kept verbatim, as the cause of a task error.
 */
import type { ClientRequest, IncomingMessage } from "node:http";
import { request as httpsRequest, type RequestOptions } from "node:https";
import { isIP } from "node:net";
import * as Context from "effect/Context";
import * as Data from "effect/Data";
import * as Effect from "effect/Effect";
import * as Layer from "effect/Layer";
import * as Result from "effect/Result";
import * as Schema from "effect/Schema";
import * as SchemaParser from "effect/SchemaParser";
import { formatDecodeError, timerDelayMs } from "../advanced.ts";
import { http } from "./node-http.ts";
import { dialLookup, type ResolveOverride } from "./resolve-override.ts";

// --- the service ------------------------------------------------------------------------------------

/** PEM material for an `https:` endpoint: the CA bundle to trust and, optionally, a client certificate. */
export interface EtcdClientTls {
  readonly ca: string;
  readonly cert?: string;
  readonly key?: string;
}

/** Where and how to call: a base URL (`http(s)://host:port`), the per-call deadline, TLS for https. */
export interface EtcdEndpoint {
  readonly url: string;
  readonly timeoutMs: number;
  /** Required for `https:` URLs; ignored for `http:`. */
  readonly tls?: EtcdClientTls;
}

/**
 * A call failed:
 * - `InvalidRequest`: it could not be built (bad URL, https without a CA, a bad resolve rule);
 * - `Transport`: no usable answer (refused, DNS, TLS handshake, reset, an oversized body);
 * - `Timeout`: the deadline expired (connect, headers or body);
 * - `Etcd`: etcd answered with an error (`grpcCode` when it said one; `httpStatus` always);
 * - `Malformed`: a 200 answer that is not what the call returns.
 */
export class EtcdCallError extends Data.TaggedError("EtcdCallError")<{
  readonly reason: "InvalidRequest" | "Transport" | "Timeout" | "Etcd" | "Malformed";
  readonly message: string;
  readonly grpcCode?: number;
  readonly httpStatus?: number;
}> {}

/** `/v3/maintenance/status` of the member that answered. */
export interface EtcdStatus {
  readonly memberId: string;
  readonly revision: number;
  /** Size of the backend database file. */
  readonly dbSize: number;
  /** Bytes of the file in use (etcd ≥ 3.4; `dbSize` when absent). */
  readonly dbSizeInUse: number;
}

export interface EtcdMember {
  readonly id: string;
  /** Empty until the member has started. */
  readonly name: string;
  readonly clientUrls: ReadonlyArray<string>;
  readonly isLearner: boolean;
}

export interface EtcdGatewayShape {
  readonly status: (endpoint: EtcdEndpoint) => Effect.Effect<EtcdStatus, EtcdCallError>;
  /** The store's current revision, from the header of a linearizable count-only range. */
  readonly currentRevision: (endpoint: EtcdEndpoint) => Effect.Effect<number, EtcdCallError>;
  /** Compacts the key space up to `revision`; `physical` waits until the backend has applied it. */
  readonly compact: (
    endpoint: EtcdEndpoint,
    revision: number,
    physical: boolean,
  ) => Effect.Effect<void, EtcdCallError>;
  /** Defragments the backend of the member behind `endpoint` (only that member). */
  readonly defragment: (endpoint: EtcdEndpoint) => Effect.Effect<void, EtcdCallError>;
  readonly memberList: (endpoint: EtcdEndpoint) => Effect.Effect<ReadonlyArray<EtcdMember>, EtcdCallError>;
}

export class EtcdGateway extends Context.Service<EtcdGateway, EtcdGatewayShape>()(
  "opstask/handlers/EtcdGateway",
) {}

// --- answers ----------------------------------------------------------------------------------------

/** int64/uint64 fields: the gateway writes strings; numbers are accepted too. Absent means 0 (proto3). */
const Int64Json = Schema.Union([Schema.String, Schema.Number]);
const optionalInt64 = Schema.optionalKey(Int64Json);

const HeaderSchema = Schema.Struct({ member_id: optionalInt64, revision: optionalInt64 });

const StatusSchema = Schema.Struct({
  header: Schema.optionalKey(HeaderSchema),
  dbSize: optionalInt64,
  dbSizeInUse: optionalInt64,
});

const RangeSchema = Schema.Struct({ header: Schema.optionalKey(HeaderSchema) });

const MemberListSchema = Schema.Struct({
  members: Schema.optionalKey(
    Schema.Array(
      Schema.Struct({
        ID: optionalInt64,
        name: Schema.optionalKey(Schema.String),
        clientURLs: Schema.optionalKey(Schema.Array(Schema.String)),
        isLearner: Schema.optionalKey(Schema.Boolean),
      }),
    ),
  ),
});

const ErrorBodySchema = Schema.Struct({
  code: Schema.optionalKey(Schema.Number),
  message: Schema.optionalKey(Schema.String),
  error: Schema.optionalKey(Schema.String),
});

const malformed = (path: string, detail: string) =>
  new EtcdCallError({ reason: "Malformed", message: `unexpected answer from ${path}: ${detail}` });

const toInt = (
  path: string,
  field: string,
  value: string | number | undefined,
): Effect.Effect<number, EtcdCallError> => {
  const n = value === undefined ? 0 : Number(value);
  return Number.isSafeInteger(n) && n >= 0
    ? Effect.succeed(n)
    : Effect.fail(malformed(path, `${field} ${JSON.stringify(value)} is not a non-negative integer`));
};

const decodeWith =
  <S extends Schema.ConstraintDecoder<unknown>>(schema: S, path: string) =>
  (body: unknown): Effect.Effect<S["Type"], EtcdCallError> =>
    Effect.fromResult(
      Result.mapError(SchemaParser.decodeUnknownResult(schema)(body), (issue) =>
        malformed(path, formatDecodeError(issue).join("; ")),
      ),
    );

/** etcd's error answer: its message (gateway v2 `message`, v1 `error`) and gRPC code. */
export const etcdErrorOf = (status: number, body: string): EtcdCallError => {
  const parsed = parseJson(body);
  const decoded = Result.isSuccess(parsed)
    ? SchemaParser.decodeUnknownResult(ErrorBodySchema)(parsed.success)
    : undefined;
  const fields = decoded !== undefined && Result.isSuccess(decoded) ? decoded.success : undefined;
  const text = fields?.message ?? fields?.error;
  const snippet = body.trim().slice(0, 200);
  return new EtcdCallError({
    reason: "Etcd",
    message:
      text !== undefined && text !== ""
        ? text
        : `unexpected status ${status}${snippet === "" ? "" : `: ${snippet}`}`,
    httpStatus: status,
    ...(fields?.code === undefined ? {} : { grpcCode: fields.code }),
  });
};

const parseJson = (text: string): Result.Result<unknown, string> => {
  try {
    const value: unknown = JSON.parse(text);
    return Result.succeed(value);
  } catch (error) {
    return Result.fail(error instanceof Error ? error.message : String(error));
  }
};

// --- transport --------------------------------------------------------------------------------------

/** Answers larger than this are refused: every answer of these calls is a few hundred bytes. */
const MaxBodyBytes = 1 << 20;

// Node's hint to trust the system store does not apply: only the given CA is ever trusted.
const systemCaHint = /; if the root CA is installed locally, try running Node\.js with --use-system-ca$/;

const describe = (error: unknown): string => {
  if (!(error instanceof Error)) return String(error);
  const code = "code" in error && typeof error.code === "string" ? error.code : undefined;
  const message = error.message.replace(systemCaHint, "").trim();
  return code === undefined || message.includes(code) ? message : `${message} (${code})`;
};

const invalid = (message: string) => new EtcdCallError({ reason: "InvalidRequest", message });

interface Call {
  readonly url: URL;
  readonly options: RequestOptions;
  readonly body: string;
  readonly timeoutMs: number;
}

const callOf = (
  endpoint: EtcdEndpoint,
  path: string,
  payload: unknown,
  resolve: ReadonlyArray<ResolveOverride>,
): Result.Result<Call, EtcdCallError> => {
  const base = URL.canParse(endpoint.url) ? new URL(endpoint.url) : undefined;
  if (base === undefined) return Result.fail(invalid(`parse "${endpoint.url}": invalid URL`));
  if (base.protocol !== "http:" && base.protocol !== "https:") {
    return Result.fail(invalid(`unsupported protocol scheme "${base.protocol.replace(/:$/, "")}"`));
  }
  const secure = base.protocol === "https:";
  const tls = endpoint.tls;
  if (secure && (tls === undefined || tls.ca.trim() === "")) {
    return Result.fail(invalid("https requires CA certificates; none were given"));
  }
  if (!Number.isFinite(endpoint.timeoutMs) || endpoint.timeoutMs <= 0) {
    return Result.fail(invalid(`invalid timeout ${endpoint.timeoutMs} ms`));
  }
  const url = new URL(path, base);
  const port = url.port === "" ? (secure ? 443 : 80) : Number(url.port);
  const lookup = dialLookup(resolve, url.hostname, port);
  if (Result.isFailure(lookup)) return Result.fail(invalid(lookup.failure));
  const body = JSON.stringify(payload);
  // IP-literal hosts are verified against IP SANs; SNI must not carry them.
  const servername = isIP(url.hostname) === 0 ? url.hostname : undefined;
  const options: RequestOptions = {
    protocol: url.protocol,
    hostname: url.hostname,
    port,
    path: `${url.pathname}${url.search}`,
    method: "POST",
    headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
    // A fresh connection per call: nothing pooled outlives the call, and TLS material is per call.
    agent: false,
    ...(lookup.success === undefined ? {} : { lookup: lookup.success }),
    ...(secure && tls !== undefined
      ? {
          ca: tls.ca,
          ...(tls.cert === undefined ? {} : { cert: tls.cert }),
          ...(tls.key === undefined ? {} : { key: tls.key }),
          ...(servername === undefined ? {} : { servername }),
          minVersion: "TLSv1.2",
          rejectUnauthorized: true,
        }
      : {}),
  };
  return Result.succeed({ url, options, body, timeoutMs: endpoint.timeoutMs });
};

interface Answer {
  readonly status: number;
  readonly body: string;
}

const headersTimeout = "context deadline exceeded (Client.Timeout exceeded while awaiting headers)";
const bodyTimeout = "context deadline exceeded (Client.Timeout or context cancellation while reading body)";

/** Sends the call and reads the whole answer within the deadline; interruption aborts it. */
const exchange = (call: Call): Effect.Effect<Answer, EtcdCallError> =>
  Effect.callback<Answer, EtcdCallError>((resume) => {
    const target = call.url.href;
    const fail = (reason: "Transport" | "Timeout", detail: string) =>
      resume(Effect.fail(new EtcdCallError({ reason, message: `Post "${target}": ${detail}` })));
    let settled = false;
    let timedOut = false;
    let headersSeen = false;
    let req: ClientRequest | undefined;
    const settle = (then: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      then();
      req?.destroy();
    };
    const timer = setTimeout(() => {
      timedOut = true;
      settle(() => fail("Timeout", headersSeen ? bodyTimeout : headersTimeout));
    }, timerDelayMs(call.timeoutMs));
    try {
      req = (call.options.protocol === "https:" ? httpsRequest : http.request)(call.options);
    } catch (error) {
      settle(() => resume(Effect.fail(invalid(describe(error)))));
      return Effect.void;
    }
    req.on("error", (error) => {
      if (!timedOut) settle(() => fail("Transport", describe(error)));
    });
    req.on("response", (incoming: IncomingMessage) => {
      headersSeen = true;
      const chunks: Buffer[] = [];
      let size = 0;
      incoming.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > MaxBodyBytes) {
          settle(() => fail("Transport", `response body larger than ${MaxBodyBytes} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      incoming.on("end", () =>
        settle(() =>
          resume(
            Effect.succeed({
              status: incoming.statusCode ?? 0,
              body: Buffer.concat(chunks).toString("utf8"),
            }),
          ),
        ),
      );
      incoming.on("error", (error) => {
        if (!timedOut) settle(() => fail("Transport", describe(error)));
      });
      incoming.on("close", () => {
        if (!incoming.complete && !timedOut) settle(() => fail("Transport", "unexpected EOF"));
      });
    });
    req.end(call.body);
    return Effect.sync(() => settle(() => undefined));
  });

export interface NodeEtcdGatewayOptions {
  readonly resolve?: ReadonlyArray<ResolveOverride>;
}

export const makeNodeEtcdGateway = (options: NodeEtcdGatewayOptions = {}): EtcdGatewayShape => {
  const resolve = options.resolve ?? [];

  /** One POST; 200 answers are parsed as JSON, anything else becomes etcd's error. */
  const post = (
    endpoint: EtcdEndpoint,
    path: string,
    payload: unknown,
  ): Effect.Effect<unknown, EtcdCallError> =>
    Effect.gen(function* () {
      const call = yield* Effect.fromResult(callOf(endpoint, path, payload, resolve));
      const answer = yield* exchange(call);
      if (answer.status !== 200) return yield* etcdErrorOf(answer.status, answer.body);
      return yield* Effect.fromResult(
        Result.mapError(parseJson(answer.body), (detail) => malformed(path, detail)),
      );
    }).pipe(Effect.withSpan("EtcdGateway.post", { attributes: { path } }));

  const status = (endpoint: EtcdEndpoint) =>
    Effect.gen(function* () {
      const path = "/v3/maintenance/status";
      const answer = yield* post(endpoint, path, {}).pipe(Effect.flatMap(decodeWith(StatusSchema, path)));
      const dbSize = yield* toInt(path, "dbSize", answer.dbSize);
      const dbSizeInUse =
        answer.dbSizeInUse === undefined ? dbSize : yield* toInt(path, "dbSizeInUse", answer.dbSizeInUse);
      const result: EtcdStatus = {
        memberId: String(answer.header?.member_id ?? ""),
        revision: yield* toInt(path, "revision", answer.header?.revision),
        dbSize,
        dbSizeInUse,
      };
      return result;
    });

  const currentRevision = (endpoint: EtcdEndpoint) =>
    Effect.gen(function* () {
      const path = "/v3/kv/range";
      // Key "\0" alone, count only: linearizable (served after a read index), nothing is transferred.
      const answer = yield* post(endpoint, path, { key: "AA==", count_only: true }).pipe(
        Effect.flatMap(decodeWith(RangeSchema, path)),
      );
      const revision = yield* toInt(path, "revision", answer.header?.revision);
      return revision === 0 ? yield* malformed(path, "no revision in the response header") : revision;
    });

  const compact = (endpoint: EtcdEndpoint, revision: number, physical: boolean) =>
    post(endpoint, "/v3/kv/compaction", { revision: String(revision), physical }).pipe(Effect.asVoid);

  const defragment = (endpoint: EtcdEndpoint) =>
    post(endpoint, "/v3/maintenance/defragment", {}).pipe(Effect.asVoid);

  const memberList = (endpoint: EtcdEndpoint) =>
    Effect.gen(function* () {
      const path = "/v3/cluster/member/list";
      const answer = yield* post(endpoint, path, { linearizable: true }).pipe(
        Effect.flatMap(decodeWith(MemberListSchema, path)),
      );
      return (answer.members ?? []).map(
        (member): EtcdMember => ({
          id: String(member.ID ?? ""),
          name: member.name ?? "",
          clientUrls: member.clientURLs ?? [],
          isLearner: member.isLearner ?? false,
        }),
      );
    });

  return EtcdGateway.of({ status, currentRevision, compact, defragment, memberList });
};

/** `EtcdGateway` over Node's HTTP client, dialling through `resolve`. */
export const nodeEtcdGatewayLayer = (options: NodeEtcdGatewayOptions = {}): Layer.Layer<EtcdGateway> =>
  Layer.succeed(EtcdGateway, makeNodeEtcdGateway(options));

/** True for etcd's "required revision has been compacted" (the revision is at or below the compacted one). */
export const isCompactedError = (error: EtcdCallError): boolean =>
  error.reason === "Etcd" && error.message.includes("required revision has been compacted");
