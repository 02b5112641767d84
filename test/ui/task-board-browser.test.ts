/**
 * The task board in a real browser (headless Chromium from Debian's package) against the real
 * controller process (`opstask controller --ui 127.0.0.1:0`) on a local control plane, while tasks
 * run: a snapshot and a maintenance through a real etcd-backup-restore and etcd, a slow snapshot with a
 * rejected duplicate beside it, and a snapshot that fails (its sidecar answers 500). The page must show
 * each task's state and error, the machine's counts, and one task's passes; it must load nothing from
 * anywhere but the controller; and it must refuse a foreign Origin and a missing token.
 * Screenshots go to test-artifacts/task-board/ (git-ignored).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BackupRestore, startBackupRestore } from "../../src/devcluster/backup-restore.ts";
import { createReadyEtcd } from "../../src/devcluster/ready-etcd.ts";
import type { TaskDetail, TaskSummary } from "../../src/ui/board-records.ts";
import { Mode, type StandIn, startStandIn } from "../etcd/support/stand-in.ts";
import { type Browser, launchChromium, type Page } from "../support/chromium.ts";
import { repoRoot, useControlPlane } from "../support/cluster.ts";
import { waitFor } from "../support/wait.ts";

const crds = ["druid.gardener.cloud_etcdopstasks.yaml", "druid.gardener.cloud_etcds.yaml"].map((file) =>
  join(repoRoot, "deploy", "crds", file),
);
const cluster = useControlPlane({ crds });
const artifacts = join(repoRoot, "test-artifacts", "task-board");
const tasks = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcdopstasks" };

/** The row of a task as the page shows it, by column. */
const rowOf = (name: string) => `(() => {
  const row = [...document.querySelectorAll("#tasks tbody tr")].find((r) => r.dataset.key.endsWith("/${name}"));
  return row && Object.fromEntries([...row.cells].map((cell) => [cell.dataset.col, cell.textContent]));
})()`;

/** The options of a fetch by the board's page: its token, as the page sends it. */
const withToken = "{ headers: { authorization: 'Bearer ' + sessionStorage.getItem('opstask-board-token') } }";

const countOf = (state: string) =>
  `Number(document.querySelector('#machine g.node[data-state="${state}"]')?.dataset.count ?? -1)`;

describe("the task board in a browser", () => {
  let kc: KubeConfig;
  let api: CustomObjectsApi;
  let namespace: string;
  let backupRestore: BackupRestore;
  let slow: StandIn;
  let broken: StandIn;
  let controller: ChildProcess | undefined;
  let controllerLog = "";
  let boardUrl: string;
  let browser: Browser;
  let page: Page;

  const create = (name: string, etcdName: string, config: Record<string, unknown>) =>
    api.createNamespacedCustomObject({
      ...tasks,
      namespace,
      body: {
        apiVersion: "druid.gardener.cloud/v1alpha1",
        kind: "EtcdOpsTask",
        metadata: { name, namespace },
        spec: { etcdName, ttlSecondsAfterFinished: 3600, config },
      },
    });

  const waitRow = (name: string, what: string, test: string): Promise<Record<string, string>> =>
    page.waitFor(
      `(() => { const row = ${rowOf(name)}; return row && (${test}) && row; })()`,
      `${name}: ${what}`,
    );

  beforeAll(async () => {
    mkdirSync(artifacts, { recursive: true });
    const plane = cluster();
    kc = plane.makeKubeConfig();
    api = kc.makeApiClient(CustomObjectsApi);
    // The control plane is this file's own: its `default` namespace is as clean as a new one, and
    // reads better in the screenshots (one of them is the README's).
    namespace = "default";
    backupRestore = await startBackupRestore({ deltaSnapshotPeriod: "1h" });
    // The slow sidecar answers after 10 s: long enough to see the task in execution.calling while the
    // others run, and to have its duplicate rejected meanwhile.
    slow = await startStandIn({ mode: Mode.delay(10_000, Mode.ok("")) });
    broken = await startStandIn({ mode: Mode.status(500, "disk full") });
    const clientPort = Number(new URL(backupRestore.etcdClientUrl).port);
    await createReadyEtcd(kc, { name: "etcd-main", namespace, backupPort: backupRestore.port, clientPort });
    await createReadyEtcd(kc, { name: "etcd-slow", namespace, backupPort: slow.port });
    await createReadyEtcd(kc, { name: "etcd-broken", namespace, backupPort: broken.port });
    const resolve = ["etcd-main", "etcd-slow", "etcd-broken"]
      .map((etcd) => `${etcd}-client.${namespace}:*:127.0.0.1`)
      .join(",");
    const child = spawn(
      process.execPath,
      [
        join(repoRoot, "src/cli/main.ts"),
        "controller",
        "--kubeconfig",
        plane.kubeconfigPath,
        "--namespace",
        namespace,
        "--ui",
        "127.0.0.1:0",
        "--metrics-address",
        "0",
        "--probe-address",
        "0",
        "--resolve",
        resolve,
        "--log-level",
        "warn",
      ],
      { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, KUBECONFIG: "" } },
    );
    controller = child;
    boardUrl = await new Promise<string>((found, failed) => {
      const timer = setTimeout(
        () => failed(new Error(`no task board URL in 30 s:\n${controllerLog}`)),
        30_000,
      );
      child.stderr?.on("data", (chunk: Buffer) => {
        controllerLog += chunk.toString();
        const match = /task board at (http:\/\/\S+)/.exec(controllerLog);
        if (match?.[1] !== undefined) {
          clearTimeout(timer);
          found(match[1]);
        }
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        failed(new Error(`controller exited (${code}):\n${controllerLog}`));
      });
    });
    browser = await launchChromium({ width: 1600, height: 1000 });
    page = await browser.newPage();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    if (controller !== undefined && controller.exitCode === null) {
      const exited = new Promise((resolve) => controller?.once("exit", resolve));
      controller.kill("SIGTERM");
      const timer = setTimeout(() => controller?.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    }
    await slow?.close();
    await broken?.close();
    await backupRestore?.stop();
  }, 60_000);

  it("shows a snapshot, a maintenance, a rejected duplicate and a failure live, with the machine's counts", async () => {
    const origin = new URL(boardUrl).origin;
    expect(await page.goto(boardUrl)).toBe(200);
    // The page keeps the token in this tab (board-guard.ts): the address bar no longer shows it.
    expect(await page.evaluate<string>("location.href")).toBe(`${origin}/`);
    await page.waitFor("document.querySelectorAll('#machine g.node').length > 20", "the machine drawn");
    await page.waitFor("document.getElementById('live').textContent === 'live'", "the event stream open");

    await create("slow", "etcd-slow", { onDemandSnapshot: { type: "full" } });
    const running = await waitRow("slow", "running", "row.machine === 'execution.calling'");
    expect(running.state).toBe("InProgress");
    expect(
      await page.waitFor<number>(
        `${countOf("execution.calling")} >= 1 && ${countOf("execution.calling")}`,
        "a count on execution.calling",
      ),
    ).toBe(1);
    // Its pass is still in flight: the page shows what it did so far.
    await page.evaluate(`document.querySelector('#tasks tbody tr[data-key="${namespace}/slow"]').click()`);
    const inFlight = await page.waitFor<string>(
      "(() => { const text = document.getElementById('detail-passes').textContent; return text.includes('execute: running') && text; })()",
      "the slow task's pass in flight",
    );
    expect(inFlight).toContain("AddFinalizer: ok");
    expect(inFlight).toContain("Normal Started");
    await create("slow-again", "etcd-slow", { onDemandSnapshot: { type: "full" } });
    const rejected = await waitRow("slow-again", "rejected", "row.state === 'Rejected'");
    expect(rejected.lastError).toContain("ERR_DUPLICATE_TASK");
    await page.screenshot(join(artifacts, "1-running-and-duplicate.png"));

    await create("snapshot", "etcd-main", { onDemandSnapshot: { type: "full" } });
    await waitRow("snapshot", "succeeded", "row.state === 'Succeeded'");
    await create("maintenance", "etcd-main", {
      onDemandMaintenance: { compaction: {}, defragmentation: {} },
    });
    const maintenance = await waitRow("maintenance", "succeeded", "row.state === 'Succeeded'");
    expect(maintenance.kind).toBe("onDemandMaintenance");
    await create("broken", "etcd-broken", { onDemandSnapshot: { type: "full" } });
    const failed = await waitRow("broken", "failed", "row.state === 'Failed'");
    expect(failed.lastError).toContain("ERR_CREATE_SNAPSHOT");
    expect(failed.phase).toBe("Execution/Failed");
    await page.evaluate(`document.querySelector('#tasks tbody tr[data-key="${namespace}/broken"]').click()`);
    await page.waitFor(
      "document.getElementById('detail-why').textContent.startsWith('Failed')",
      "broken's why",
    );
    // The README's picture: one task still running, four finished, one of them described.
    if ((await page.evaluate<Record<string, string>>(rowOf("slow"))).state === "InProgress")
      await page.screenshot(join(artifacts, "3-live-board.png"));
    const done = await waitRow("slow", "succeeded", "row.state === 'Succeeded'");
    expect(done.kind).toBe("onDemandSnapshot");

    // Every finished task waits for its TTL in `retained`: five there, none left calling.
    expect(await page.waitFor<number>(`${countOf("retained")} === 5 && 5`, "five tasks in retained")).toBe(5);
    expect(await page.evaluate<number>(countOf("execution.calling"))).toBe(0);
    // The page's counts are the JSON API's.
    const machine = (await page.evaluate<{ counts: Record<string, number> }>(
      `fetch('/api/machine', ${withToken}).then((r) => r.json())`,
    )) as { counts: Record<string, number> };
    expect(machine.counts).toEqual({ retained: 5 });

    // Filters: only the failed ones.
    await page.evaluate(
      "(() => { const s = document.getElementById('filter-state'); s.value = 'Failed'; s.dispatchEvent(new Event('input')); })()",
    );
    expect(
      await page.evaluate<string[]>(
        "[...document.querySelectorAll('#tasks tbody tr')].map((r) => r.dataset.key)",
      ),
    ).toEqual([`${namespace}/broken`]);

    // One task's path: the failed one, with its handler call, writes, Event and describe's "why".
    const why = await page.waitFor<string>(
      "document.getElementById('detail-why').textContent.startsWith('Failed') && document.getElementById('detail-why').textContent",
      "the failed task's why",
    );
    expect(why).toContain("ERR_CREATE_SNAPSHOT");
    const passes = await page.evaluate<string>("document.getElementById('detail-passes').textContent");
    expect(passes).toContain("execute: failed");
    expect(passes).toContain("execution.calling —phase.failed→ failed");
    expect(passes).toContain("PatchStatus");
    expect(passes).toContain("Warning Failed");
    expect(
      await page.evaluate<string[]>(
        "[...document.querySelectorAll('#machine g.node.current')].map((g) => g.dataset.state)",
      ),
    ).toEqual(["retained"]);
    await page.screenshot(join(artifacts, "2-failed-task-detail.png"));

    // The same detail as JSON, for other tools.
    const detail = await page.evaluate<TaskDetail>(
      `fetch('/api/tasks/${namespace}/slow-again', ${withToken}).then((r) => r.json())`,
    );
    expect(detail.why).toMatch(/^Rejected: ERR_DUPLICATE_TASK/);
    expect(detail.history.flatMap((pass) => pass.transitions.map((step) => step.to))).toContain(
      "admission.gateDuplicate",
    );
    const list = await page.evaluate<{ tasks: TaskSummary[] }>(
      `fetch('/api/tasks?state=Succeeded', ${withToken}).then((r) => r.json())`,
    );
    expect(list.tasks.map((task) => task.name).sort()).toEqual(["maintenance", "slow", "snapshot"]);

    // Nothing but the controller was asked for anything.
    expect(page.requests.filter((url) => !url.startsWith(`${origin}/`))).toEqual([]);
  }, 120_000);

  it("refuses a missing or wrong token, a foreign Origin and a foreign Host", async () => {
    const origin = new URL(boardUrl).origin;
    // A fresh browser profile has no token: the page (code, no data) says one is needed, the API 401.
    const stranger = await browser.newPage({ isolated: true });
    expect(await stranger.goto(`${origin}/`)).toBe(200);
    expect(await stranger.evaluate<string>("document.body.textContent")).toContain("a token is needed");
    expect(await stranger.goto(`${origin}/?token=not-the-token`)).toBe(401);
    expect(await stranger.goto(`${origin}/api/tasks`)).toBe(401);

    // Another origin on the same machine (another port) in the browser that has the board open: it has
    // no token to send (board-token-scope.test.ts), and the board refuses it by Origin anyway, for
    // fetch and for SSE.
    const foreign = await serveForeignPage(origin);
    try {
      const attacker = await browser.newPage();
      expect(await attacker.goto(foreign.url)).toBe(200);
      await attacker.waitFor("window.done === 2", "the foreign page's two requests");
      // The status of a response the page may not read comes as a DevTools event of its own, which may
      // arrive after the page has seen its request fail (it did once, on a loaded machine).
      const statusOf = (url: string) => waitFor(`the status of ${url}`, () => attacker.statusOf(url), 10_000);
      expect(await statusOf(`${origin}/api/tasks`)).toBe(403);
      expect(await statusOf(`${origin}/api/events`)).toBe(403);
    } finally {
      const closed = new Promise((resolve) => foreign.server.close(resolve));
      foreign.server.closeAllConnections();
      await closed;
    }

    // Tools: the token as a header works; a foreign Host (DNS rebinding) or Origin does not.
    const token = new URL(boardUrl).searchParams.get("token") ?? "";
    const bearer = { authorization: `Bearer ${token}` };
    expect((await fetch(`${origin}/api/tasks`, { headers: bearer })).status).toBe(200);
    expect(
      (await fetch(`${origin}/api/tasks`, { headers: { ...bearer, origin: "http://evil.example" } })).status,
    ).toBe(403);
    expect((await fetch(`${origin}/api/tasks`)).status).toBe(401);
    const rebound = await rawStatus(origin, "/api/tasks", {
      host: `evil.example:${new URL(origin).port}`,
      ...bearer,
    });
    expect(rebound).toBe(403);
    expect((await fetch(`${origin}/api/tasks`, { method: "POST", headers: bearer })).status).toBe(405);
  }, 60_000);
});

/** A page on another origin of this machine that tries to read the board with the browser's credentials. */
const serveForeignPage = async (board: string): Promise<{ server: Server; url: string }> => {
  const script = `window.done = 0;
fetch(${JSON.stringify(`${board}/api/tasks`)}, { credentials: "include" }).catch(() => {}).finally(() => window.done++);
const source = new EventSource(${JSON.stringify(`${board}/api/events`)}, { withCredentials: true });
source.onerror = () => { source.close(); window.done++; };`;
  const server = createServer((request, response) => {
    if (request.url === "/attack.js") {
      response.writeHead(200, { "content-type": "text/javascript" }).end(script);
      return;
    }
    response
      .writeHead(200, { "content-type": "text/html" })
      .end('<!DOCTYPE html><script src="/attack.js"></script>');
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { server, url: `http://127.0.0.1:${port}/` };
};

/** A request with a Host header of our choosing (fetch does not allow setting Host). */
const rawStatus = async (origin: string, path: string, headers: Record<string, string>): Promise<number> => {
  const { request } = await import("node:http");
  const url = new URL(origin);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path, headers }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end();
  });
};
