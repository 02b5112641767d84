/**
 * The checksum handler: Admit refuses a URL the controller's download policy does not allow
 * (Rejected, ERR_URL_NOT_ALLOWED, naming the field and the fix); Execute downloads the backup and
 * compares its SHA-256. A mismatch ends the task (`Failed`, ERR_CHECKSUM_MISMATCH); a server that
 * refuses the download ends it too (ERR_DOWNLOAD_REFUSED), as do a redirect (never followed,
 * ERR_URL_NOT_ALLOWED) and a body past the byte cap (ERR_BACKUP_TOO_LARGE); a server that does not
 * answer is tried again with backoff (ERR_DOWNLOAD_BACKUP). Execute only reads, so running it again is
 * harmless (at-least-once).
 *
 * The policy (download-policy.ts) is the controller's configuration, a service like the downloader:
 * the task names a URL, never where the controller may go.
 */
import * as Effect from "effect/Effect";
import { completed, failed, type HandlerRegistry, retry, type TaskHandler } from "opstask";
import type { BackupVerification } from "./backup-verification.ts";
import { DownloadPolicy, refusalOf } from "./download-policy.ts";
import { BackupDownloader, type DownloadError } from "./downloader.ts";

const notAllowed = (cause: string) =>
  failed("Backup URL not allowed", {
    code: "ERR_URL_NOT_ALLOWED",
    message: "the backup URL is not one this controller downloads from",
    cause,
  });

const admit = (task: BackupVerification) =>
  Effect.gen(function* () {
    const config = task.spec.config;
    if (config.kind !== "checksum") return completed("Verification admitted");
    const refusal = refusalOf(config.url, yield* DownloadPolicy);
    return refusal === undefined ? completed("Verification admitted") : notAllowed(refusal);
  });

const outcomeOf = (error: DownloadError) => {
  switch (error.reason) {
    case "NotAllowed":
      return notAllowed(error.message);
    case "TooLarge":
      return failed("Backup too large", {
        code: "ERR_BACKUP_TOO_LARGE",
        message: "the backup is larger than this controller reads",
        cause: error.message,
      });
    case "Refused":
      return failed("Failed to download backup", {
        code: "ERR_DOWNLOAD_REFUSED",
        message: "the server refused the download",
        cause: error.message,
      });
    case "Unavailable":
      return retry("Backup not reachable; retrying", {
        error: { code: "ERR_DOWNLOAD_BACKUP", message: "failed to download backup", cause: error.message },
      });
  }
};

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
  }).pipe(Effect.catch((error: DownloadError) => Effect.succeed(outcomeOf(error))));

export const checksumHandler: TaskHandler<BackupVerification, BackupDownloader | DownloadPolicy> = {
  admit,
  execute: verify,
  cleanup: () => Effect.succeed(completed("Nothing to clean up")),
};

export const handlers: HandlerRegistry<BackupVerification, BackupDownloader | DownloadPolicy> = {
  checksum: checksumHandler,
};
