/** `BackupDownloader` over HTTP(S) with Node's fetch, hashing the body as it streams in. */
import { createHash } from "node:crypto";
import * as Effect from "effect/Effect";
import * as Layer from "effect/Layer";
import { BackupDownloader, type Download, DownloadError } from "./downloader.ts";

const download = async (url: string, timeoutMs: number, signal: AbortSignal): Promise<Download> => {
  const deadline = AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
  let response: Response;
  try {
    response = await fetch(url, { signal: deadline });
  } catch (error) {
    throw new DownloadError({ reason: "Unavailable", message: `GET ${url}: ${reasonOf(error)}` });
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw new DownloadError({
      reason: response.status >= 400 && response.status < 500 ? "Refused" : "Unavailable",
      message: `GET ${url}: ${response.status} ${response.statusText}`,
    });
  }
  const hash = createHash("sha256");
  let bytes = 0;
  try {
    if (response.body !== null) {
      for await (const chunk of response.body) {
        hash.update(chunk);
        bytes += chunk.byteLength;
      }
    }
  } catch (error) {
    throw new DownloadError({
      reason: "Unavailable",
      message: `GET ${url}: reading the body: ${reasonOf(error)}`,
    });
  }
  return { sha256: hash.digest("hex"), bytes };
};

const reasonOf = (error: unknown): string => {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
  return error.name === "TimeoutError" ? "timed out" : `${error.message}${cause}`;
};

export const httpDownloaderLayer = Layer.succeed(BackupDownloader, {
  digest: (url, timeoutMs) =>
    Effect.tryPromise({
      try: (signal) => download(url, timeoutMs, signal),
      catch: (error) =>
        error instanceof DownloadError
          ? error
          : new DownloadError({ reason: "Unavailable", message: reasonOf(error) }),
    }),
});
