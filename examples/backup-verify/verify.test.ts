/**
 * The backup-verify operator's lifecycle, in memory (`simulate`): the real kind and the real handler,
 * over a scripted downloader, under a fake clock. Plus the HTTP downloader against a local server, and
 * the real handler over real HTTP under the simulation.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import * as Effect from "effect/Effect";
import * as Layer from "effect/Layer";
import { completed, failed, promiseHandler } from "opstask";
import { simulate } from "opstask/testing";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type BackupVerification, backupVerificationKind, Kind } from "./backup-verification.ts";
import { type DownloadPolicyShape, downloadPolicyLayer } from "./download-policy.ts";
import { BackupDownloader } from "./downloader.ts";
import { httpDownloaderLayer } from "./downloader-http.ts";
import { type FakeAnswer, fakeDownloader, sha256 } from "./downloader-memory.ts";
import { handlers } from "./handlers.ts";

const backup = "backup bytes";
const url = "http://backups.example/daily.tar";

const verification = (
  name: string,
  spec: { expected?: string; url?: string; ttl?: number; backup?: string } = {},
) => ({
  metadata: { name },
  spec: {
    ...(spec.backup === undefined ? {} : { backupName: spec.backup }),
    ttlSecondsAfterFinished: spec.ttl ?? 60,
    config: { checksum: { url: spec.url ?? url, expectedSha256: spec.expected ?? sha256(backup) } },
  },
});

/** The controller's configuration in these tests: backups come from backups.example only. */
const policy: DownloadPolicyShape = { allowedHosts: ["backups.example"], maxBytes: 1024 };

const simulation = (answers: ReadonlyArray<FakeAnswer> = [{ body: backup }]) => {
  const downloader = fakeDownloader({ [url]: answers });
  const services = Layer.merge(downloader.layer, downloadPolicyLayer(policy));
  const sim = simulate({ kind: backupVerificationKind, handlers, services });
  return { sim, downloader };
};

/** The HTTP downloader under a policy (what main.ts provides, from its environment). */
const httpServices = (allowed: DownloadPolicyShape) =>
  httpDownloaderLayer.pipe(Layer.provideMerge(downloadPolicyLayer(allowed)));

describe("a verification whose checksum matches", () => {
  it("succeeds in one pass, with the size in the description", () => {
    const { sim } = simulation();
    sim.create(verification("good"));
    sim.run();
    expect(sim.state("good")).toBe("Succeeded");
    expect(sim.status("good")?.lastOperation).toMatchObject({
      type: "Execution",
      state: "Completed",
      description: `Checksum verified (${backup.length} bytes)`,
    });
    expect(sim.object("good")?.metadata).toMatchObject({
      finalizers: ["examples.opstask.dev/backup-verification"],
    });
    expect(sim.events("good").map((event) => event.reason)).toEqual(["Started", "Succeeded"]);
    expect(sim.calls("good").map((call) => call.phase)).toEqual(["admit", "execute"]);
  });

  it("is deleted after its TTL, with cleanup, and not before", () => {
    const { sim } = simulation();
    sim.create(verification("ttl", { ttl: 60 }));
    sim.run();
    sim.advance(59_000);
    expect(sim.exists("ttl")).toBe(true);
    sim.advance(1_000);
    expect(sim.exists("ttl")).toBe(false);
    expect(sim.calls("ttl").map((call) => call.phase)).toEqual(["admit", "execute", "cleanup"]);
    expect(sim.writes("ttl").map((write) => write.effect)).toEqual([
      "AddFinalizer",
      "PatchStatus",
      "PatchStatus",
      "DeleteTask",
      "RemoveFinalizer",
    ]);
  });
});

describe("a verification whose checksum does not match", () => {
  it("fails with ERR_CHECKSUM_MISMATCH naming both digests, and is not retried", () => {
    const { sim, downloader } = simulation([{ body: "tampered" }]);
    sim.create(verification("bad"));
    sim.run();
    sim.advance(30_000);
    expect(sim.state("bad")).toBe("Failed");
    const [error] = sim.status("bad")?.lastErrors ?? [];
    expect(error?.code).toBe("ERR_CHECKSUM_MISMATCH");
    expect(error?.description).toContain(`expected sha256 ${sha256(backup)}, got ${sha256("tampered")}`);
    expect(downloader.requests(url)).toBe(1);
    expect(sim.events("bad").map((event) => event.reason)).toEqual(["Started", "Failed"]);
  });

  it("fails with ERR_DOWNLOAD_REFUSED when the server refuses the download", () => {
    const { sim } = simulation([{ error: "Refused", message: `GET ${url}: 404 Not Found` }]);
    sim.create(verification("missing"));
    sim.run();
    expect(sim.state("missing")).toBe("Failed");
    expect(sim.status("missing")?.lastErrors?.[0]?.code).toBe("ERR_DOWNLOAD_REFUSED");
  });
});

describe("a backup that is not reachable", () => {
  it("is retried with backoff, every error recorded, until the download works", () => {
    const unreachable: FakeAnswer = { error: "Unavailable", message: `GET ${url}: connect ECONNREFUSED` };
    const { sim, downloader } = simulation([unreachable, unreachable, { body: backup }]);
    sim.create(verification("flaky"));
    sim.run();
    expect(sim.state("flaky")).toBe("InProgress");
    expect(sim.status("flaky")?.lastOperation?.description).toBe("Backup not reachable; retrying");
    expect(downloader.requests(url)).toBe(1);
    sim.advance(10_000);
    expect(sim.state("flaky")).toBe("Succeeded");
    expect(downloader.requests(url)).toBe(3);
    expect(sim.status("flaky")?.lastErrors?.map((error) => error.code)).toEqual([
      "ERR_DOWNLOAD_BACKUP",
      "ERR_DOWNLOAD_BACKUP",
    ]);
    // Each retry waited for its backoff: the calls are spread over the fake clock, not bunched.
    const executes = sim.calls("flaky").filter((call) => call.phase === "execute");
    expect(new Set(executes.map((call) => call.at)).size).toBe(3);
  });

  it("survives a controller crash while backing off", () => {
    const { sim } = simulation([{ error: "Unavailable" }, { body: backup }]);
    sim.create(verification("crashy"));
    sim.run();
    sim.crash();
    sim.advance(10_000);
    expect(sim.state("crashy")).toBe("Succeeded");
  });
});

describe("a backup URL outside the controller's allow-list", () => {
  for (const [what, outside] of [
    ["another host", "http://169.254.169.254/latest/meta-data/"],
    ["an allowed name as userinfo of another host", "http://backups.example@evil.example/daily.tar"],
    ["an allowed host on another port", "https://backups.example:8443/daily.tar"],
    ["a look-alike subdomain", "http://backups.example.evil.example/daily.tar"],
  ] as const)
    it(`is Rejected at Admit, naming the field and the fix, and never fetched (${what})`, () => {
      const { sim, downloader } = simulation();
      sim.create(verification("outside", { url: outside }));
      sim.run();
      expect(sim.state("outside")).toBe("Rejected");
      const [error] = sim.status("outside")?.lastErrors ?? [];
      expect(error?.code).toBe("ERR_URL_NOT_ALLOWED");
      expect(error?.description).toContain("spec.config.checksum.url names host");
      expect(error?.description).toContain("ask the operator to add it to BACKUP_VERIFY_ALLOWED_HOSTS");
      expect(downloader.requests(outside)).toBe(0);
      expect(sim.calls("outside").map((call) => call.phase)).toEqual(["admit"]);
    });
});

describe("admission", () => {
  it("rejects a second verification of the same backup while the first runs (ERR_DUPLICATE_TASK)", () => {
    const sim = simulate({
      kind: backupVerificationKind,
      handlers: {
        checksum: {
          execute: (_task, call) =>
            call.attempt === 1 ? { kind: "hang" } : { kind: "completed", description: "ok" },
        },
      },
    });
    sim.create(verification("first", { backup: "daily" }));
    sim.run();
    sim.advance(1_000);
    sim.create(verification("second", { backup: "daily" }));
    sim.run();
    expect(sim.hanging()).toEqual(["first"]);
    expect(sim.state("second")).toBe("Rejected");
    expect(sim.status("second")?.lastOperation?.description).toBe(
      `${Kind} for the same backup is already in progress`,
    );
  });

  it("rejects a task whose spec does not decode (ERR_INVALID_TASK), naming the field", () => {
    const { sim } = simulation();
    sim.create(verification("typo", { expected: "not-a-digest" }));
    sim.run();
    expect(sim.state("typo")).toBe("Rejected");
    const [error] = sim.status("typo")?.lastErrors ?? [];
    expect(error?.code).toBe("ERR_INVALID_TASK");
    expect(error?.description).toContain("spec.config.checksum.expectedSha256");
    sim.advance(3_600_000);
    expect(sim.exists("typo")).toBe(false);
  });

  it("rejects a config member without a handler (ERR_UNSUPPORTED_TASK)", () => {
    const { sim } = simulation();
    sim.create({
      metadata: { name: "restore" },
      spec: { ttlSecondsAfterFinished: 5, config: { restore: {} } },
    });
    sim.run();
    expect(sim.state("restore")).toBe("Rejected");
    expect(sim.status("restore")?.lastErrors?.[0]?.code).toBe("ERR_UNSUPPORTED_TASK");
  });
});

describe("the HTTP downloader", () => {
  let server: Server;
  let base: string;
  let flaky = 0;
  /** A second server the policy does not allow: it must never see a request. */
  let other: Server;
  let otherBase: string;
  const otherRequests: string[] = [];
  const dailyRequests = { count: 0 };
  /** Bytes the endless body had written when the downloader hung up. */
  const endless = { written: 0, closed: false };
  let allowed: DownloadPolicyShape;
  beforeAll(async () => {
    other = createServer((request, response) => {
      otherRequests.push(request.url ?? "");
      response.end(backup);
    });
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    otherBase = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
    server = createServer((request, response) => {
      if (request.url === "/flaky.tar") flaky += 1;
      if (request.url === "/daily.tar") dailyRequests.count += 1;
      if (request.url === "/daily.tar" || (request.url === "/flaky.tar" && flaky > 1)) response.end(backup);
      else if (request.url === "/flaky.tar") response.writeHead(503).end();
      else if (request.url === "/moved.tar")
        response.writeHead(302, { location: `${otherBase}/daily.tar` }).end();
      else if (request.url === "/moved-here.tar") response.writeHead(301, { location: "/daily.tar" }).end();
      else if (request.url === "/big.tar") response.end("x".repeat(4096));
      else if (request.url === "/endless.tar") {
        // Chunked, no length: only the downloader's cap ends it.
        const chunk = "y".repeat(256);
        const write = () => {
          while (!response.destroyed && response.write(chunk)) endless.written += chunk.length;
          if (!response.destroyed) response.once("drain", write);
        };
        response.on("close", () => {
          endless.closed = true;
        });
        write();
      } else response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    allowed = { allowedHosts: [base.slice("http://".length)], maxBytes: 1024 };
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await new Promise<void>((resolve) => other.close(() => resolve()));
  });

  const fetchDigest = (target: string) =>
    Effect.runPromise(
      Effect.gen(function* () {
        return yield* (yield* BackupDownloader).digest(target, 5_000);
      }).pipe(Effect.provide(httpServices(allowed)), Effect.result),
    );
  const digest = (path: string) => fetchDigest(`${base}${path}`);

  it("refuses a host the policy does not allow before any request (NotAllowed)", async () => {
    const result = await fetchDigest(`${otherBase}/daily.tar`);
    expect(result).toMatchObject({
      _tag: "Failure",
      failure: { reason: "NotAllowed", message: expect.stringContaining("BACKUP_VERIFY_ALLOWED_HOSTS") },
    });
    expect(otherRequests).toEqual([]);
  });

  it("does not follow a redirect to another host: the other host sees no request", async () => {
    const result = await digest("/moved.tar");
    expect(result).toMatchObject({
      _tag: "Failure",
      failure: {
        reason: "NotAllowed",
        message: expect.stringContaining(
          `302 redirect to ${otherBase}/daily.tar; redirects are not followed`,
        ),
      },
    });
    expect(otherRequests).toEqual([]);
  });

  it("does not follow a redirect on the same host either", async () => {
    const before = dailyRequests.count;
    const result = await digest("/moved-here.tar");
    expect(result).toMatchObject({ _tag: "Failure", failure: { reason: "NotAllowed" } });
    expect(dailyRequests.count).toBe(before);
  });

  it("refuses a body whose declared length exceeds the cap, without reading it (TooLarge)", async () => {
    const result = await digest("/big.tar");
    expect(result).toMatchObject({
      _tag: "Failure",
      failure: {
        reason: "TooLarge",
        message: expect.stringContaining("(4096 bytes, as declared) exceeds the 1024-byte cap"),
      },
    });
  });

  it("cuts a body without a length at the cap, and hangs up (TooLarge)", async () => {
    const result = await digest("/endless.tar");
    expect(result).toMatchObject({
      _tag: "Failure",
      failure: { reason: "TooLarge", message: expect.stringContaining("exceeds the 1024-byte cap") },
    });
    await vi.waitFor(() => expect(endless.closed).toBe(true));
  });

  it("hashes what the server sends", async () => {
    const result = await digest("/daily.tar");
    expect(result).toMatchObject({
      _tag: "Success",
      success: { sha256: sha256(backup), bytes: backup.length },
    });
  });

  it("calls a 404 Refused and a refused connection Unavailable", async () => {
    expect(await digest("/nothing")).toMatchObject({ _tag: "Failure", failure: { reason: "Refused" } });
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const refused = await Effect.runPromise(
      Effect.gen(function* () {
        return yield* (yield* BackupDownloader).digest(`http://127.0.0.1:${port}/x`, 5_000);
      }).pipe(
        Effect.provide(httpServices({ allowedHosts: [`127.0.0.1:${port}`], maxBytes: 1024 })),
        Effect.result,
      ),
    );
    expect(refused).toMatchObject({ _tag: "Failure", failure: { reason: "Unavailable" } });
  });

  it("ends the task when the server redirects or the backup is too large (Failed, with the reason)", async () => {
    const sim = simulate({ kind: backupVerificationKind, handlers, services: httpServices(allowed) });
    sim.create(verification("moved", { url: `${base}/moved.tar` }));
    sim.create(verification("endless", { url: `${base}/endless.tar` }));
    sim.run();
    await sim.settle();
    expect(sim.state("moved")).toBe("Failed");
    expect(sim.status("moved")?.lastErrors?.[0]).toMatchObject({
      code: "ERR_URL_NOT_ALLOWED",
      description: expect.stringContaining("name the final URL in spec.config.checksum.url"),
    });
    expect(sim.state("endless")).toBe("Failed");
    expect(sim.status("endless")?.lastErrors?.[0]).toMatchObject({
      code: "ERR_BACKUP_TOO_LARGE",
      description: expect.stringContaining("BACKUP_VERIFY_MAX_BYTES"),
    });
    expect(otherRequests).toEqual([]);
    await sim.dispose();
  });

  it("runs under the simulation too: real HTTP calls are delivered by settle()", async () => {
    const sim = simulate({ kind: backupVerificationKind, handlers, services: httpServices(allowed) });
    sim.create(verification("real", { url: `${base}/daily.tar` }));
    sim.create(verification("real-flaky", { url: `${base}/flaky.tar` }));
    sim.run();
    expect(sim.hanging().sort()).toEqual(["real", "real-flaky"]);
    await sim.settle();
    expect(sim.state("real")).toBe("Succeeded");
    expect(sim.state("real-flaky")).toBe("InProgress");
    sim.advance(1_000);
    await sim.settle();
    expect(sim.state("real-flaky")).toBe("Succeeded");
    await sim.dispose();
  });
});

describe("a handler written without Effect (promiseHandler)", () => {
  it("runs plain async functions, and their results arrive with settle()", async () => {
    const sim = simulate({
      kind: backupVerificationKind,
      handlers: {
        checksum: promiseHandler<BackupVerification>({
          execute: async (task) => {
            await new Promise((resolve) => setTimeout(resolve, 5));
            return task.metadata.name === "ok"
              ? completed("Verified")
              : failed("Checksum mismatch", { code: "ERR_CHECKSUM_MISMATCH", message: "mismatch" });
          },
        }),
      },
    });
    sim.create(verification("ok"));
    sim.create(verification("nope"));
    sim.run();
    await sim.settle();
    expect(sim.state("ok")).toBe("Succeeded");
    expect(sim.state("nope")).toBe("Failed");
    expect(sim.status("nope")?.lastErrors?.[0]?.description).toContain("message: mismatch");
  });
});
