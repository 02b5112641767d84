/**
 * The checksum handler: Execute downloads the backup and compares its SHA-256. A mismatch ends the
 * task (`Failed`, ERR_CHECKSUM_MISMATCH); a server that refuses the download ends it too
 * (ERR_DOWNLOAD_REFUSED); a server that does not answer is tried again with backoff
 * (ERR_DOWNLOAD_BACKUP). Execute only reads, so running it again is harmless (at-least-once).
 */
import * as Effect from "effect/Effect";
import { completed, failed, type HandlerRegistry, retry, type TaskHandler } from "opstask";
import type { BackupVerification } from "./backup-verification.ts";
import { BackupDownloader, type DownloadError } from "./downloader.ts";

const verify = (task: BackupVerification) =>
  Effect.gen(function* () {
    const config = task.spec.config;
    if (config.kind !== "checksum")
      return failed("Unsupported verification", {
        code: "ERR_UNSUPPORTED_TASK",
        message: `no checksum config in ${task.metadata.name}`,
      });
    const downloader = yield* BackupDownloader;
    const download = yield* downloader.digest(config.url, config.timeoutSeconds * 1000);
    if (download.sha256 === config.expectedSha256)
      return completed(`Checksum verified (${download.bytes} bytes)`);
    return failed("Checksum mismatch", {
      code: "ERR_CHECKSUM_MISMATCH",
      message: "the backup's checksum does not match",
      cause: `expected sha256 ${config.expectedSha256}, got ${download.sha256}`,
    });
  }).pipe(
    Effect.catch((error: DownloadError) =>
      Effect.succeed(
        error.reason === "Refused"
          ? failed("Failed to download backup", {
              code: "ERR_DOWNLOAD_REFUSED",
              message: "the server refused the download",
              cause: error.message,
            })
          : retry("Backup not reachable; retrying", {
              error: {
                code: "ERR_DOWNLOAD_BACKUP",
                message: "failed to download backup",
                cause: error.message,
              },
            }),
      ),
    ),
  );

export const checksumHandler: TaskHandler<BackupVerification, BackupDownloader> = {
  admit: () => Effect.succeed(completed("Verification admitted")),
  execute: verify,
  cleanup: () => Effect.succeed(completed("Nothing to clean up")),
};

export const handlers: HandlerRegistry<BackupVerification, BackupDownloader> = { checksum: checksumHandler };
