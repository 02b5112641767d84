/**
 * The services task handlers use, as Effect services: reading objects (`ObjectReader`) and calling the
 * etcd-backup-restore sidecar over HTTP(S) (`BackupRestoreHttp`). Each has a real implementation and an
 * in-memory or local one (siblings of this file), so one handler runs under every interpreter.
 *
 * Failures are tagged values whose `message` is the text druid records as an error's cause: the
 * apiserver's `Status` message for reads (`etcds.druid.gardener.cloud "x" not found`), and a Go-style
 * `Post "<url>": <reason>` for transport errors.
 */
import * as Context from "effect/Context";
import * as Data from "effect/Data";
import type * as Effect from "effect/Effect";
import type * as Scope from "effect/Scope";
import type { Etcd } from "./api/etcd.ts";
import type { Secret, StatefulSet } from "./objects.ts";

/** The resources handlers read, spelled as the apiserver names them in its messages. */
export const Resources = {
  etcd: "etcds.druid.gardener.cloud",
  statefulSet: "statefulsets.apps",
  secret: "secrets",
} as const;
export type Resource = (typeof Resources)[keyof typeof Resources];

/** The apiserver's text for a missing object, e.g. `secrets "ca-etcdbr" not found`. */
export const notFoundMessage = (resource: Resource, name: string): string =>
  `${resource} "${name}" not found`;

/**
 * Reading an object failed. `NotFound` is final for most callers; `Failed` (any other API error, a
 * network failure, an object that does not decode) is worth retrying.
 */
export class ReadError extends Data.TaggedError("ReadError")<{
  readonly reason: "NotFound" | "Failed";
  readonly resource: Resource;
  readonly namespace: string;
  readonly name: string;
  /** The API's message (or the client's), used verbatim as the cause of a task error. */
  readonly message: string;
}> {}

export interface ObjectReaderShape {
  readonly getEtcd: (namespace: string, name: string) => Effect.Effect<Etcd, ReadError>;
  readonly getStatefulSet: (namespace: string, name: string) => Effect.Effect<StatefulSet, ReadError>;
  readonly getSecret: (namespace: string, name: string) => Effect.Effect<Secret, ReadError>;
}

/** Reads single objects by namespace and name (a direct GET; no cache). */
export class ObjectReader extends Context.Service<ObjectReader, ObjectReaderShape>()(
  "opstask/handlers/ObjectReader",
) {}

/**
 * A POST to the backup-restore server. The server certificate is verified against `servername` (the
 * host of the URL: `<etcd>-client.<ns>.svc` or a member address), with `ca` (PEM, one or more certificates) as the only trust
 * anchors; no client certificate is sent. `timeoutMs` bounds the whole exchange: connect, TLS
 * handshake, response headers and, when it is read, the body.
 */
export interface BackupRestoreRequest {
  readonly url: string;
  readonly timeoutMs: number;
  /** Required for `https:` URLs; ignored for `http:`. */
  readonly ca?: string;
  readonly servername: string;
}

export interface BackupRestoreResponse {
  readonly status: number;
  /** Reads the whole body as UTF-8, within what is left of the timeout; later calls share the result. */
  readonly body: () => Effect.Effect<string, HttpError>;
}

/**
 * - `InvalidRequest`: the request could not be built (bad URL, https without a CA): druid's
 *   `ERR_CREATE_HTTP_REQUEST`;
 * - `Transport`: no usable response (refused, DNS, TLS handshake, reset): `ERR_EXECUTE_HTTP_REQUEST`;
 * - `Timeout`: the request's timeout expired (while connecting, awaiting headers or reading the body).
 */
export class HttpError extends Data.TaggedError("HttpError")<{
  readonly reason: "InvalidRequest" | "Transport" | "Timeout";
  readonly message: string;
}> {}

export interface BackupRestoreHttpShape {
  /**
   * Sends the POST and succeeds once the response headers arrive. The connection belongs to the
   * caller's scope: closing the scope releases it, whether or not the body was read (a full snapshot's
   * body is never read).
   */
  readonly post: (
    request: BackupRestoreRequest,
  ) => Effect.Effect<BackupRestoreResponse, HttpError, Scope.Scope>;
}

export class BackupRestoreHttp extends Context.Service<BackupRestoreHttp, BackupRestoreHttpShape>()(
  "opstask/handlers/BackupRestoreHttp",
) {}
