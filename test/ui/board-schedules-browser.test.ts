/**
 * The task board's schedule list in a real browser (headless Chromium) against the real controller
 * process (`opstask controller --ui 127.0.0.1:0`) on a local control plane with the TaskSchedule CRD:
 * a schedule appears with its cron, time zone and the next run time the controller wrote to its
 * status, a suspended one says so, and a schedule whose author text carries markup shows it as text.
 * A screenshot goes to test-artifacts/task-board/schedules.png (git-ignored).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { CustomObjectsApi } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Browser, launchChromium, type Page } from "../support/chromium.ts";
import { repoRoot, useControlPlane } from "../support/cluster.ts";
import { waitFor } from "../support/wait.ts";

const crds = [
  "druid.gardener.cloud_etcdopstasks.yaml",
  "druid.gardener.cloud_etcds.yaml",
  "opstask.gardener.cloud_taskschedules.yaml",
].map((file) => join(repoRoot, "deploy", "crds", file));
const cluster = useControlPlane({ crds });
const schedulesApi = { group: "opstask.gardener.cloud", version: "v1alpha1", plural: "taskschedules" };
const namespace = "default";
const artifacts = join(repoRoot, "test-artifacts", "task-board");
const hostile = '<img src=x onerror="window.__injected=1">';

/** The row of a schedule as the page shows it, by column. */
const rowOf = (name: string) => `(() => {
  const row = [...document.querySelectorAll("#schedules tbody tr")].find((r) => r.dataset.key === "${namespace}/${name}");
  return row && Object.fromEntries([...row.cells].map((cell) => [cell.dataset.col, cell.textContent]));
})()`;

describe("the task board's schedules in a browser", () => {
  let api: CustomObjectsApi;
  let controller: ChildProcess | undefined;
  let controllerLog = "";
  let boardUrl: string;
  let browser: Browser;
  let page: Page;

  const createSchedule = (name: string, spec: Record<string, unknown>) =>
    api.createNamespacedCustomObject({
      ...schedulesApi,
      namespace,
      body: {
        apiVersion: "opstask.gardener.cloud/v1alpha1",
        kind: "TaskSchedule",
        metadata: { name, namespace },
        spec: {
          taskKind: { apiVersion: "druid.gardener.cloud/v1alpha1", kind: "EtcdOpsTask" },
          taskTemplate: { spec: { etcdName: "etcd-main", config: { onDemandSnapshot: { type: "full" } } } },
          ...spec,
        },
      },
    });

  beforeAll(async () => {
    const plane = cluster();
    api = plane.makeKubeConfig().makeApiClient(CustomObjectsApi);
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
  }, 60_000);

  it("lists each schedule with its cron, time zone and next run time, live, author text as text", async () => {
    expect(await page.goto(boardUrl)).toBe(200);
    await page.waitFor("document.getElementById('live').textContent === 'live'", "the event stream open");
    await createSchedule("nightly", { schedule: "0 3 * * *", timeZone: "Europe/Berlin" });
    await createSchedule("paused", { schedule: "*/5 * * * *", suspend: true });
    await createSchedule("broken", { schedule: "0 3 * * *", timeZone: hostile });

    // The next run time the controller wrote is the one the page shows.
    const nextRunTime = await waitFor("nightly's status.nextRunTime", async () => {
      const object = (await api.getNamespacedCustomObject({
        ...schedulesApi,
        namespace,
        name: "nightly",
      })) as {
        status?: { nextRunTime?: string };
      };
      return object.status?.nextRunTime;
    });
    const nightly = await page.waitFor<Record<string, string>>(
      `(() => { const row = ${rowOf("nightly")}; return row && row.nextRun === ${JSON.stringify(nextRunTime)} && row; })()`,
      "nightly with its next run time",
      30_000,
    );
    expect(nightly).toMatchObject({
      namespace,
      name: "nightly",
      cron: "0 3 * * *",
      timeZone: "Europe/Berlin",
      suspended: "no",
      active: "",
      lastSchedule: "",
    });
    // 03:00 in Berlin is 01:00 or 02:00 UTC, in the future.
    expect(nextRunTime).toMatch(/T0[12]:00:00Z$/);
    expect(Date.parse(nextRunTime)).toBeGreaterThan(Date.now());

    const paused = await page.waitFor<Record<string, string>>(
      rowOf("paused"),
      "the suspended schedule",
      30_000,
    );
    expect(paused).toMatchObject({
      cron: "*/5 * * * *",
      timeZone: "UTC",
      suspended: "yes",
      nextRun: "(suspended)",
    });

    // The invalid time zone is the author's text: shown as text in its cell and in the Ready message.
    const broken = await page.waitFor<Record<string, string>>(
      `(() => { const row = ${rowOf("broken")}; return row && row.skipped !== "" && row; })()`,
      "the broken schedule with its reason",
      30_000,
    );
    expect(broken.timeZone).toBe(hostile);
    expect(broken.skipped).toContain(hostile);
    expect(await page.evaluate<number>("document.querySelectorAll('#schedules img').length")).toBe(0);
    expect(await page.evaluate<boolean>("window.__injected === 1")).toBe(false);
    expect(await page.evaluate<boolean>("document.getElementById('no-schedules').hidden")).toBe(true);

    mkdirSync(artifacts, { recursive: true });
    await page.screenshot(join(artifacts, "schedules.png"));

    // Deleted: the row goes.
    await api.deleteNamespacedCustomObject({ ...schedulesApi, namespace, name: "paused" });
    await page.waitFor(`${rowOf("paused")} === undefined`, "the deleted schedule gone", 30_000);
  }, 120_000);
});
