/**
 * `BackupRestoreHttp` over node:http(s), against a local stand-in: curl `--resolve` semantics, one
 * deadline for the whole exchange, connections released with the caller's scope, and requests that
 * cannot be built.
 */
import { Effect, Exit, Fiber } from "effect";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  makeNodeBackupRestoreHttp,
  type NodeBackupRestoreHttpOptions,
} from "../../src/etcd/backup-restore-http-node.ts";
import { type BackupRestoreRequest, HttpError } from "../../src/etcd/services.ts";
import { type Issued, makeCA, makeServerCertificate } from "./support/pki.ts";
import { Mode, type StandIn, startStandIn } from "./support/stand-in.ts";

const host = "test-etcd-client.ns";
let ca: Issued;
let plain: StandIn;
let secure: StandIn;

beforeAll(async () => {
  ca = makeCA();
  plain = await startStandIn();
  secure = await startStandIn({ tls: makeServerCertificate(ca, [host]) });
});
afterAll(async () => {
  await plain.close();
  await secure.close();
});
afterEach(() => {
  plain.setMode(Mode.ok());
  secure.setMode(Mode.ok());
});

/** POSTs and reads the body (when `read`); the scope closes before the result is returned. */
const post = (
  request: BackupRestoreRequest,
  options: NodeBackupRestoreHttpOptions,
  read = true,
): Promise<Exit.Exit<{ status: number; body: string | undefined }, HttpError>> => {
  const http = makeNodeBackupRestoreHttp(options);
  return Effect.runPromise(
    Effect.exit(
      Effect.scoped(
        Effect.gen(function* () {
          const response = yield* http.post(request);
          const body = read ? yield* response.body() : undefined;
          return { status: response.status, body };
        }),
      ),
    ),
  );
};

const failureOf = <A>(exit: Exit.Exit<A, HttpError>): HttpError | undefined =>
  Exit.isFailure(exit)
    ? exit.cause.reasons.flatMap((r) => (r._tag === "Fail" ? [r.error] : []))[0]
    : undefined;

const toLocal = (port: number | "*" = "*") => ({ resolve: [{ host, port, address: "127.0.0.1" }] });

describe("--resolve HOST:PORT:ADDRESS semantics", () => {
  it("http: connects to 127.0.0.1:<port>; the Host header stays <etcd>-client.<ns>:<port>", async () => {
    plain.setMode(Mode.ok("done"));
    const exit = await post(
      { url: `http://${host}:${plain.port}/snapshot/delta`, timeoutMs: 2_000, servername: host },
      toLocal(),
    );
    expect(exit).toEqual(Exit.succeed({ status: 200, body: "done" }));
    expect(plain.requests.at(-1)).toMatchObject({
      method: "POST",
      path: "/snapshot/delta",
      host: `${host}:${plain.port}`,
    });
  });

  it("https: connects to 127.0.0.1:<port>; Host, SNI and the certificate check use <etcd>-client.<ns>", async () => {
    const exit = await post(
      {
        url: `https://${host}:${secure.port}/snapshot/full?final=true`,
        timeoutMs: 2_000,
        servername: host,
        ca: ca.certPem,
      },
      toLocal(secure.port),
      false,
    );
    expect(exit).toEqual(Exit.succeed({ status: 200, body: undefined }));
    expect(secure.requests.at(-1)).toMatchObject({
      path: "/snapshot/full",
      query: "final=true",
      host: `${host}:${secure.port}`,
      sni: host,
      clientCertificate: false,
    });
  });

  it("an entry applies only to its host and port (case-insensitive host); the first match wins", async () => {
    const url = `http://${host.toUpperCase()}:${plain.port}/snapshot/full`;
    // 127.0.0.2 is loopback too, but nothing listens there: using that entry would be refused.
    const resolve = [
      { host, port: plain.port + 1, address: "127.0.0.2" },
      { host: "other-client.ns", port: "*" as const, address: "127.0.0.2" },
      { host, port: plain.port, address: "127.0.0.1" },
      { host, port: "*" as const, address: "127.0.0.2" },
    ];
    expect(Exit.isSuccess(await post({ url, timeoutMs: 2_000, servername: host }, { resolve }, false))).toBe(
      true,
    );
    const refused = failureOf(
      await post(
        { url, timeoutMs: 2_000, servername: host },
        { resolve: [{ host, port: "*", address: "127.0.0.2" }] },
      ),
    );
    expect(refused).toMatchObject({ reason: "Transport" });
    expect(refused?.message).toMatch(
      new RegExp(`^Post "${url.replace(/[.?]/g, "\\$&")}": .*ECONNREFUSED 127\\.0\\.0\\.2`),
    );
  });
});

describe("one deadline for connect + headers + body", () => {
  it("headers late → Timeout 'awaiting headers'", async () => {
    plain.setMode(Mode.delay(10_000));
    const url = `http://${host}:${plain.port}/snapshot/full`;
    const started = Date.now();
    const error = failureOf(await post({ url, timeoutMs: 200, servername: host }, toLocal()));
    // The 200 ms deadline ended it, not the server's 10 s delay.
    expect(Date.now() - started).toBeLessThan(8_000);
    expect(error).toEqual(
      new HttpError({
        reason: "Timeout",
        message: `Post "${url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`,
      }),
    );
  });

  it("the body read gets only what is left of the timeout (headers after 200 ms, body withheld)", async () => {
    plain.setMode(Mode.delay(200, Mode.stallBody()));
    const started = Date.now();
    const error = failureOf(
      await post(
        { url: `http://${host}:${plain.port}/snapshot/delta`, timeoutMs: 500, servername: host },
        toLocal(),
      ),
    );
    const elapsed = Date.now() - started;
    expect(error).toMatchObject({
      reason: "Timeout",
      message: expect.stringContaining("while reading body"),
    });
    // The deadline covered the body too: it fired, after at least the whole 500 ms.
    expect(elapsed).toBeGreaterThanOrEqual(450);
  });

  it("a body that is never read does not hold the connection: it closes with the scope", async () => {
    plain.setMode(Mode.stallBody());
    const exit = await post(
      { url: `http://${host}:${plain.port}/snapshot/full`, timeoutMs: 10_000, servername: host },
      toLocal(),
      false,
    );
    expect(exit).toEqual(Exit.succeed({ status: 200, body: undefined }));
    await expect.poll(() => plain.openConnections(), { timeout: 1_000, interval: 20 }).toBe(0);
  });

  it("interrupting the call aborts the request", async () => {
    plain.setMode(Mode.delay(10_000));
    const http = makeNodeBackupRestoreHttp(toLocal());
    const before = plain.requests.length;
    const fiber = Effect.runFork(
      Effect.scoped(
        http.post({ url: `http://${host}:${plain.port}/snapshot/full`, timeoutMs: 10_000, servername: host }),
      ),
    );
    await expect.poll(() => plain.requests.length, { timeout: 1_000, interval: 10 }).toBe(before + 1);
    await Effect.runPromise(Fiber.interrupt(fiber));
    await expect.poll(() => plain.openConnections(), { timeout: 1_000, interval: 20 }).toBe(0);
  });
});

describe("requests that cannot be built → InvalidRequest", () => {
  it.each([
    [
      "a URL that does not parse",
      { url: "http://test-etcd-client.ns:70000/snapshot/full" },
      'parse "http://test-etcd-client.ns:70000/snapshot/full": invalid URL',
    ],
    [
      "another scheme",
      { url: "ftp://test-etcd-client.ns/snapshot/full" },
      'unsupported protocol scheme "ftp"',
    ],
    [
      "https without a CA",
      { url: "https://test-etcd-client.ns:1/snapshot/full" },
      "https requires CA certificates; none were given",
    ],
    [
      "a timeout that is not positive",
      { url: "http://test-etcd-client.ns:1/", timeoutMs: 0 },
      "invalid timeout 0 ms",
    ],
  ])("%s", async (_, patch, message) => {
    const error = failureOf(await post({ timeoutMs: 1_000, servername: host, ...patch }, toLocal()));
    expect(error).toEqual(new HttpError({ reason: "InvalidRequest", message }));
  });

  it("a resolve address that is not an IP", async () => {
    const error = failureOf(
      await post(
        { url: `http://${host}:1/`, timeoutMs: 1_000, servername: host },
        { resolve: [{ host, port: "*", address: "localhost" }] },
      ),
    );
    expect(error).toEqual(
      new HttpError({
        reason: "InvalidRequest",
        message: 'resolve override for test-etcd-client.ns: "localhost" is not an IP address',
      }),
    );
  });
});
