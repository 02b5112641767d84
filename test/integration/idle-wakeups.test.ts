/**
 * What an idle controller costs while nothing happens, on a real apiserver:
 *
 * - it sleeps until something is due: no periodic timer below a second runs (prom-client's event-loop
 *   delay histogram woke the loop every 10 ms; see src/runtime/metrics.ts). The controller as
 *   deployed (bundled CLI, the Deployment's Node flags, leader election on, deploy/'s RBAC) with
 *   nothing to do: its main thread's wake-ups are counted over a window;
 * - it holds only what it uses: the modules loaded on demand (the YAML parser, the inspector relay,
 *   the task board, the CRD generator, the task CLI, client-node) are not loaded by a controller
 *   configured as in a pod (flags, a kubeconfig in JSON as the pod's in-cluster credentials need no
 *   parser), once it watches and idles. Run from the sources, so that each module is named.
 *
 * A wake-up is a voluntary context switch of the main thread (/proc/<pid>/task/<pid>/status): the
 * event loop blocks in epoll_pwait until a timer or a socket is due, and each return from a blocking
 * wait counts one. It is a count, not a time: a loaded machine delays wake-ups but does not add any.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { kubeconfigDocument } from "../../src/devcluster/kubeconfig.ts";
import { startProcess } from "../../src/devcluster/process.ts";
import { createTestNamespace, repoRoot, useControlPlane } from "../support/cluster.ts";
import {
  installOpstask,
  opstaskNamespace,
  opstaskServiceAccount,
  type RunningOpstask,
  startOpstask,
} from "../support/opstask-process.ts";

const crdDir = join(repoRoot, "deploy", "crds");
const cluster = useControlPlane({
  crds: readdirSync(crdDir)
    .filter((file) => file.endsWith(".yaml"))
    .map((file) => join(crdDir, file)),
});

/** Voluntary context switches of the process's main thread so far. */
const mainThreadWakeUps = (pid: number): number => {
  const status = readFileSync(`/proc/${pid}/task/${pid}/status`, "utf8");
  const count = /^voluntary_ctxt_switches:\s+(\d+)$/m.exec(status)?.[1];
  if (count === undefined) throw new Error(`/proc/${pid}/task/${pid}/status: no voluntary_ctxt_switches`);
  return Number(count);
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Leader election renews its Lease every 2 s: a request and its answer, a few wake-ups each. */
const wakeUpsPerSecondAllowed = 5;
const windowMs = 10_000;

describe("an idle controller", () => {
  let opstask: RunningOpstask;

  beforeAll(async () => {
    const plane = cluster();
    await installOpstask(plane);
    const namespace = await createTestNamespace(plane.makeKubeConfig(), "idle");
    opstask = await startOpstask(plane, {
      namespaces: [namespace],
      options: {
        leaderElect: true,
        leaderElectionNamespace: "opstask-system",
        leaderElectionId: "opstask-controller",
      },
    });
  }, 180_000);
  afterAll(async () => {
    await opstask?.stop();
  }, 60_000);

  it(`wakes up at most ${wakeUpsPerSecondAllowed} times a second with nothing to do`, async () => {
    // The start's own work (the caches' LISTs, the first Lease write, V8's idle-time GC) settles first.
    await sleep(5_000);
    const before = mainThreadWakeUps(opstask.pid);
    await sleep(windowMs);
    const perSecond = (mainThreadWakeUps(opstask.pid) - before) / (windowMs / 1000);
    expect(opstask.process.exited()).toBeUndefined();
    expect(perSecond).toBeLessThanOrEqual(wakeUpsPerSecondAllowed);
  }, 60_000);
});

/** Modules loaded only when a feature needs them (a path fragment of each). */
const onDemand = [
  "/node_modules/yaml/",
  "/src/inspect/",
  "/src/ui/task-board.ts",
  "/src/ui/board-server.ts",
  "/src/library/crd/task-crd.ts",
  "/src/cli/task/index.ts",
  "/node_modules/@kubernetes/client-node/",
];

describe("an idle controller's modules", () => {
  it("are none of those loaded on demand", async () => {
    const plane = cluster();
    await installOpstask(plane);
    const namespace = await createTestNamespace(plane.makeKubeConfig(), "idle-modules");
    const token = await plane.serviceAccountToken(opstaskNamespace, opstaskServiceAccount);
    const kubeconfig = join(plane.dir, "idle-modules-kubeconfig.json");
    writeFileSync(
      kubeconfig,
      JSON.stringify(
        kubeconfigDocument({ server: plane.server, caPem: plane.caPem, token, userName: "opstask" }),
      ),
      { mode: 0o600 },
    );
    let watching = false;
    const lines: string[] = [];
    const child = startProcess({
      name: "opstask-idle-modules",
      command: process.execPath,
      args: [
        "--import",
        join(repoRoot, "test/cli/fixtures/record-loads.mjs"),
        join(repoRoot, "src/cli/main.ts"),
        "controller",
        `--kubeconfig=${kubeconfig}`,
        `--namespace=${namespace}`,
        "--metrics-secure=false",
        "--metrics-address=127.0.0.1:0",
        "--probe-address=0",
        "--log-format=json",
      ],
      // Not the Deployment's --jitless: Node strips the sources' types with WebAssembly.
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/tmp" },
      cwd: plane.dir,
      scratchDir: plane.dir,
      tailLines: 50,
      onLine: (line) => {
        lines.push(line);
        if (line.includes("watching EtcdOpsTasks")) watching = true;
      },
    });
    try {
      const deadline = Date.now() + 120_000;
      while (!watching && child.exited() === undefined && Date.now() < deadline) await sleep(100);
      expect(watching, child.tail(20)).toBe(true);
      await sleep(3_000);
    } finally {
      // SIGTERM: the controller stops and exits; the hook prints what it loaded on the way out.
      await child.stop(30_000);
    }
    const loaded = lines.filter((line) => line.startsWith("loaded ")).map((line) => line.slice(7));
    expect(loaded.some((url) => url.endsWith("/src/runtime/informer.ts"))).toBe(true);
    expect(loaded.filter((url) => onDemand.some((fragment) => url.includes(fragment)))).toEqual([]);
  }, 180_000);
});
