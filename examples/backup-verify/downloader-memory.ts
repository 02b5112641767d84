/**
 * A scripted `BackupDownloader` for unit tests: per URL, the answers of successive requests (the last
 * one repeats). It answers synchronously, so under `simulate` a handler call completes in the step
 * that makes it.
 */
import { createHash } from "node:crypto";
import * as Effect from "effect/Effect";
import * as Layer from "effect/Layer";
import { BackupDownloader, DownloadError } from "./downloader.ts";

export type FakeAnswer =
  | { readonly body: string }
  | { readonly error: DownloadError["reason"]; readonly message?: string };

export const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex");

export const fakeDownloader = (script: Readonly<Record<string, ReadonlyArray<FakeAnswer>>>) => {
  const requests = new Map<string, number>();
  const layer = Layer.succeed(BackupDownloader, {
    digest: (url) =>
      Effect.suspend(() => {
        const served = requests.get(url) ?? 0;
        requests.set(url, served + 1);
        const answers = script[url] ?? [];
        const answer = answers[Math.min(served, answers.length - 1)];
        if (answer === undefined)
          return Effect.fail(new DownloadError({ reason: "Refused", message: `GET ${url}: 404 Not Found` }));
        if ("body" in answer)
          return Effect.succeed({ sha256: sha256(answer.body), bytes: Buffer.byteLength(answer.body) });
        return Effect.fail(
          new DownloadError({
            reason: answer.error,
            message: answer.message ?? `GET ${url}: ${answer.error}`,
          }),
        );
      }),
  });
  return { layer, requests: (url: string): number => requests.get(url) ?? 0 };
};
