/**
 * Security finding 10 (issue 16): a delta snapshot's answer is read with a size cap. A server that
 * answers with megabytes is not backup-restore, and the controller does not buffer what it sends.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Effect, Exit } from "effect";
import { afterEach, describe, expect, it } from "vitest";
import { MaxResponseBodyBytes, makeNodeBackupRestoreHttp } from "../../src/etcd/backup-restore-http-node.ts";
import type { HttpError } from "../../src/etcd/services.ts";

let server: Server | undefined;
afterEach(async () => {
  await new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve())));
  server = undefined;
});

/** Answers 200 with `bytes` bytes of body, sent in 64 KiB chunks. */
const answering = async (bytes: number): Promise<number> => {
  server = createServer((request, response) => {
    request.resume();
    response.writeHead(200, { "content-type": "application/json" });
    const chunk = Buffer.alloc(64 * 1024, "x");
    let sent = 0;
    const more = () => {
      while (sent < bytes) {
        const part = chunk.subarray(0, Math.min(chunk.length, bytes - sent));
        sent += part.length;
        if (!response.write(part)) return void response.once("drain", more);
      }
      response.end();
    };
    response.on("error", () => undefined);
    more();
  });
  await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
  return (server.address() as AddressInfo).port;
};

const readDelta = (port: number) =>
  Effect.runPromise(
    Effect.exit(
      Effect.scoped(
        Effect.gen(function* () {
          const response = yield* makeNodeBackupRestoreHttp({ resolve: [] }).post({
            url: `http://127.0.0.1:${port}/snapshot/delta`,
            timeoutMs: 30_000,
            servername: "x",
          });
          return yield* response.body();
        }),
      ),
    ),
  );

describe("the delta snapshot body is read with a size cap (finding 10)", () => {
  it("an 8 MiB answer fails the read (Transport) instead of being buffered", async () => {
    const exit = await readDelta(await answering(8 * 1024 * 1024));
    expect(Exit.isFailure(exit)).toBe(true);
    const error = Exit.isFailure(exit)
      ? (exit.cause.reasons.flatMap((r) => (r._tag === "Fail" ? [r.error] : []))[0] as HttpError | undefined)
      : undefined;
    expect(error?.reason).toBe("Transport");
    expect(error?.message).toContain(`response body larger than ${MaxResponseBodyBytes} bytes`);
  });

  it("an answer within the cap is read whole", async () => {
    const exit = await readDelta(await answering(MaxResponseBodyBytes));
    expect(Exit.isSuccess(exit) && exit.value.length).toBe(MaxResponseBodyBytes);
  });
});
