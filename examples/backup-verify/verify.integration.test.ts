/**
 * The backup-verify operator end to end: its CRD on a real kube-apiserver (`startControlPlane` from
 * `opstask/testing`), `runTaskController` with the real handler, and backups served by a local HTTP
 * server. Only the package's public entries are used, so this file runs as it is in an operator's own
 * project (the tarball test does exactly that).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import * as Layer from "effect/Layer";
import { type KubeClient, runTaskController, type TaskController, type TaskStatus } from "opstask";
import { type ControlPlane, startControlPlane } from "opstask/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ApiVersion,
  backupVerificationKind,
  Finalizer,
  Group,
  Kind,
  Plural,
  Version,
} from "./backup-verification.ts";
import { backupVerificationCrd } from "./crd.ts";
import { downloadPolicyLayer } from "./download-policy.ts";
import { httpDownloaderLayer } from "./downloader-http.ts";
import { sha256 } from "./downloader-memory.ts";
import { handlers } from "./handlers.ts";

const backup = "nightly backup contents";

interface Stored {
  readonly metadata: { readonly name: string; readonly finalizers?: string[] };
  readonly spec: { readonly ttlSecondsAfterFinished: number; readonly config: { readonly checksum: object } };
  readonly status?: TaskStatus;
}

/** Polls `probe` until it returns a value; fails after `timeoutMs` naming what it waited for. */
const waitFor = async <A>(
  what: string,
  probe: () => Promise<A | undefined>,
  timeoutMs = 30_000,
): Promise<A> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
};

// Each test waits for the controller (up to 30 s), longer than vitest's default of 5 s.
describe("backup-verify on a real API server", { timeout: 60_000 }, () => {
  let plane: ControlPlane;
  let api: KubeClient;
  let namespace: string;
  let controller: TaskController;
  let server: Server;
  let base: string;
  const requests = new Map<string, number>();
  /** A server outside the controller's allow-list: no request may reach it. */
  let outside: Server;
  let outsideBase: string;
  const outsideRequests: string[] = [];

  const create = (name: string, path: string, expected = sha256(backup), ttl = 2) =>
    createAt(name, `${base}${path}`, expected, ttl);
  const tasks = () => `/apis/${Group}/${Version}/namespaces/${namespace}/${Plural}`;
  const createAt = (name: string, url: string, expected = sha256(backup), ttl = 2) =>
    api.request({
      method: "POST",
      path: tasks(),
      body: {
        apiVersion: ApiVersion,
        kind: Kind,
        metadata: { name },
        spec: {
          ttlSecondsAfterFinished: ttl,
          config: { checksum: { url, expectedSha256: expected } },
        },
      },
    });
  const read = async (name: string): Promise<Stored | undefined> => {
    try {
      return (await api.request({ method: "GET", path: `${tasks()}/${name}` })).body as Stored;
    } catch (error) {
      if ((error as { readonly statusCode?: number }).statusCode === 404) return undefined;
      throw error;
    }
  };
  const reaches = (name: string, state: string) =>
    waitFor(`${name} to be ${state}`, async () => {
      const task = await read(name);
      return task?.status?.state === state ? task : undefined;
    });
  const gone = (name: string) =>
    waitFor(`${name} to be deleted`, async () => ((await read(name)) === undefined ? true : undefined));

  // The hook's bound covers a first run, which builds kube-apiserver and etcd (10-20 min, once).
  beforeAll(async () => {
    plane = await startControlPlane({ crds: [backupVerificationCrd] });
    outside = createServer((request, response) => {
      outsideRequests.push(request.url ?? "");
      response.end(backup);
    });
    await new Promise<void>((resolve) => outside.listen(0, "127.0.0.1", resolve));
    outsideBase = `http://127.0.0.1:${(outside.address() as AddressInfo).port}`;
    server = createServer((request, response) => {
      const path = request.url ?? "";
      const count = (requests.get(path) ?? 0) + 1;
      requests.set(path, count);
      if (path === "/nightly.tar" || path === "/tampered.tar")
        response.end(path === "/nightly.tar" ? backup : "x");
      else if (path === "/flaky.tar") (count <= 2 ? response.writeHead(503) : response).end(backup);
      else if (path === "/moved.tar")
        response.writeHead(302, { location: `${outsideBase}/nightly.tar` }).end();
      else if (path === "/huge.tar") response.end("z".repeat(128 * 1024));
      else response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // The controller's own configuration (main.ts reads it from BACKUP_VERIFY_ALLOWED_HOSTS/_MAX_BYTES).
    const policy = downloadPolicyLayer({ allowedHosts: [base.slice("http://".length)], maxBytes: 64 * 1024 });
    api = plane.kubeClient();
    namespace = await plane.createNamespace("backup-verify");
    controller = await runTaskController({
      kind: backupVerificationKind,
      handlers,
      services: httpDownloaderLayer.pipe(Layer.provideMerge(policy)),
      kubeConfig: plane.kubeClient(),
      namespace,
      timing: { backoffCapMs: 1_000, requeueIntervalMs: 1_000 },
      logLevel: "warn",
      ui: "127.0.0.1:0",
    });
  }, 30 * 60_000);
  afterAll(async () => {
    await controller?.stop();
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    await new Promise<void>((resolve) => outside?.close(() => resolve()));
    await plane?.stop();
  });

  it("verifies a good backup, records it in druid's status shape, and deletes the task after its TTL", async () => {
    await create("nightly", "/nightly.tar");
    const done = await reaches("nightly", "Succeeded");
    expect(done.metadata.finalizers).toContain(Finalizer);
    expect(done.spec.config.checksum).toMatchObject({ timeoutSeconds: 30 });
    expect(done.status).toMatchObject({
      state: "Succeeded",
      lastOperation: {
        type: "Execution",
        state: "Completed",
        description: `Checksum verified (${backup.length} bytes)`,
      },
    });
    expect(done.status?.startedAt).toBeDefined();
    expect(done.status?.lastTransitionTime).toBeDefined();
    const events = await waitFor("the Succeeded event", async () => {
      const { body } = await api.request({
        method: "GET",
        path: `/apis/events.k8s.io/v1/namespaces/${namespace}/events`,
      });
      const reasons = (body as { items: Array<{ regarding?: { name?: string }; reason?: string }> }).items
        .filter((event) => event.regarding?.name === "nightly")
        .map((event) => event.reason);
      return reasons.includes("Succeeded") ? reasons : undefined;
    });
    expect(events).toContain("Started");
    await gone("nightly");
  });

  it("fails a tampered backup with ERR_CHECKSUM_MISMATCH", async () => {
    await create("tampered", "/tampered.tar", sha256(backup), 3600);
    const failed = await reaches("tampered", "Failed");
    expect(failed.status?.lastErrors?.[0]?.code).toBe("ERR_CHECKSUM_MISMATCH");
    expect(failed.status?.lastErrors?.[0]?.description).toContain(`got ${sha256("x")}`);
    expect(requests.get("/tampered.tar")).toBe(1);
  });

  it("retries an unreachable backup with backoff until it can be downloaded", async () => {
    await create("flaky", "/flaky.tar", sha256(backup), 3600);
    const done = await reaches("flaky", "Succeeded");
    expect(done.status?.lastErrors?.map((error) => error.code)).toEqual([
      "ERR_DOWNLOAD_BACKUP",
      "ERR_DOWNLOAD_BACKUP",
    ]);
    expect(requests.get("/flaky.tar")).toBe(3);
  });

  it("fails a backup the server does not have with ERR_DOWNLOAD_REFUSED, and releases it on delete", async () => {
    await create("missing", "/missing.tar", sha256(backup), 3600);
    const failed = await reaches("missing", "Failed");
    expect(failed.status?.lastErrors?.[0]?.code).toBe("ERR_DOWNLOAD_REFUSED");
    await api.request({ method: "DELETE", path: `${tasks()}/missing` });
    await gone("missing");
    expect(controller.stats().handlerCalls).toBeGreaterThanOrEqual(3);
  });

  it("rejects a task naming a host outside its allow-list, and sends that host nothing", async () => {
    await createAt("outside", `${outsideBase}/nightly.tar`, sha256(backup), 3600);
    const rejected = await reaches("outside", "Rejected");
    expect(rejected.status?.lastErrors?.[0]?.code).toBe("ERR_URL_NOT_ALLOWED");
    expect(rejected.status?.lastErrors?.[0]?.description).toContain(
      `spec.config.checksum.url names host ${outsideBase.slice("http://".length)}`,
    );
    expect(outsideRequests).toEqual([]);
  });

  it("fails a backup whose server redirects elsewhere, without following it", async () => {
    await create("moved", "/moved.tar", sha256(backup), 3600);
    const failed = await reaches("moved", "Failed");
    expect(failed.status?.lastErrors?.[0]?.code).toBe("ERR_URL_NOT_ALLOWED");
    expect(failed.status?.lastErrors?.[0]?.description).toContain("redirects are not followed");
    expect(outsideRequests).toEqual([]);
  });

  it("fails a backup larger than its byte cap with ERR_BACKUP_TOO_LARGE", async () => {
    await create("huge", "/huge.tar", sha256(backup), 3600);
    const failed = await reaches("huge", "Failed");
    expect(failed.status?.lastErrors?.[0]?.code).toBe("ERR_BACKUP_TOO_LARGE");
    expect(failed.status?.lastErrors?.[0]?.description).toContain("exceeds the 65536-byte cap");
  });

  it("shows its tasks on the task board (`ui`), as for the EtcdOpsTask controller", async () => {
    const url = new URL(controller.boardUrl ?? "");
    const headers = { authorization: `Bearer ${url.searchParams.get("token")}` };
    const board = await waitFor("the tampered task on the board", async () => {
      const response = await fetch(`${url.origin}/api/tasks?state=Failed`, { headers });
      const body = (await response.json()) as {
        tasks: Array<{ name: string; kind: string; lastError: string }>;
      };
      return body.tasks.some((task) => task.name === "tampered") ? body : undefined;
    });
    expect(board.tasks.find((task) => task.name === "tampered")).toMatchObject({
      kind: "checksum",
      lastError: expect.stringContaining("ERR_CHECKSUM_MISMATCH"),
    });
    expect((await fetch(`${url.origin}/api/tasks`)).status).toBe(401);
  });
});
