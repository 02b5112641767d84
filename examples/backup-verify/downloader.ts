/**
 * What the checksum handler needs from the world: the SHA-256 of what a URL serves. A service, so the
 * handler runs over real HTTP in the cluster (downloader-http.ts) and over a fake in unit tests
 * (downloader-memory.ts).
 */
import * as Context from "effect/Context";
import * as Data from "effect/Data";
import type * as Effect from "effect/Effect";

export interface Download {
  /** Lowercase hex. */
  readonly sha256: string;
  readonly bytes: number;
}

/**
 * - `Refused`: the server answered with a client error (404, 403, …): asking again will not help;
 * - `Unavailable`: no answer, a timeout, or a server error: worth another try;
 * - `NotAllowed`: the download policy refuses the URL, or the server redirected (never followed);
 * - `TooLarge`: the body is longer than the policy's byte cap (reading stopped there).
 */
export class DownloadError extends Data.TaggedError("DownloadError")<{
  readonly reason: "Refused" | "Unavailable" | "NotAllowed" | "TooLarge";
  readonly message: string;
}> {}

export class BackupDownloader extends Context.Service<
  BackupDownloader,
  { readonly digest: (url: string, timeoutMs: number) => Effect.Effect<Download, DownloadError> }
>()("examples/backup-verify/BackupDownloader") {}
