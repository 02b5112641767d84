/**
 * `BackupDownloader` over HTTP(S) with Node's fetch, hashing the body as it streams in, under the
 * controller's `DownloadPolicy` (download-policy.ts): a URL whose host is not allowed is refused before
 * any request, a redirect is an error (never followed), and reading stops at the byte cap.
 */
import { createHash } from "node:crypto";
import * as Effect from "effect/Effect";
import * as Layer from "effect/Layer";
import { DownloadPolicy, type DownloadPolicyShape, MaxBytesEnv, refusalOf } from "./download-policy.ts";
import { BackupDownloader, type Download, DownloadError } from "./downloader.ts";

const tooLarge = (url: string, policy: DownloadPolicyShape, seen: string) =>
  new DownloadError({
    reason: "TooLarge",
    message: `GET ${url}: the body ${seen} the ${policy.maxBytes}-byte cap; the download stopped there (the operator raises it with ${MaxBytesEnv})`,
  });

const download = async (
  url: string,
  timeoutMs: number,
  policy: DownloadPolicyShape,
  signal: AbortSignal,
): Promise<Download> => {
  const refusal = refusalOf(url, policy);
  if (refusal !== undefined) throw new DownloadError({ reason: "NotAllowed", message: refusal });
  const deadline = AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
  let response: Response;
  try {
    // `manual`: a redirect comes back as the answer it is, and is refused below.
    response = await fetch(url, { signal: deadline, redirect: "manual" });
  } catch (error) {
    throw new DownloadError({ reason: "Unavailable", message: `GET ${url}: ${reasonOf(error)}` });
  }
  if (response.status >= 300 && response.status < 400) {
    await response.body?.cancel();
    const location = (response.headers.get("location") ?? "nowhere").slice(0, 200);
    throw new DownloadError({
      reason: "NotAllowed",
      message: `GET ${url}: ${response.status} redirect to ${location}; redirects are not followed: name the final URL in spec.config.checksum.url`,
    });
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw new DownloadError({
      reason: response.status >= 400 && response.status < 500 ? "Refused" : "Unavailable",
      message: `GET ${url}: ${response.status} ${response.statusText}`,
    });
  }
  const declared = Number(response.headers.get("content-length") ?? Number.NaN);
  if (declared > policy.maxBytes) {
    await response.body?.cancel();
    throw tooLarge(url, policy, `(${declared} bytes, as declared) exceeds`);
  }
  const hash = createHash("sha256");
  let bytes = 0;
  try {
    if (response.body !== null) {
      for await (const chunk of response.body) {
        bytes += chunk.byteLength;
        // Leaving the loop cancels the stream: the connection is dropped, nothing more is read.
        if (bytes > policy.maxBytes) throw tooLarge(url, policy, "exceeds");
        hash.update(chunk);
      }
    }
  } catch (error) {
    if (error instanceof DownloadError) throw error;
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

/** The HTTP downloader under the `DownloadPolicy` it is given (main.ts: from the environment). */
export const httpDownloaderLayer = Layer.effect(
  BackupDownloader,
  Effect.gen(function* () {
    const policy = yield* DownloadPolicy;
    return {
      digest: (url: string, timeoutMs: number) =>
        Effect.tryPromise({
          try: (signal) => download(url, timeoutMs, policy, signal),
          catch: (error) =>
            error instanceof DownloadError
              ? error
              : new DownloadError({ reason: "Unavailable", message: reasonOf(error) }),
        }),
    };
  }),
);
