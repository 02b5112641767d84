/**
 * A run whose process dies without stopping its node (SIGKILL, a crashed test worker) would leave
 * pods, containerd shims, mounts, the network namespace, routes and a cgroup behind; its watchdog
 * sweeps them up from the dead run's slot record (sweepDeadNodes, as the next start also does), and
 * nothing of the node is left.
 */
import { execFileSync, spawn } from "node:child_process";
import {
  closeSync,
  constants,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { buildImage } from "../../src/devcluster/images/build-image.ts";
import { busyboxRecipe, pauseRecipe } from "../../src/devcluster/images/cluster-images.ts";
import { defaultImageCacheDir } from "../../src/devcluster/images/index.ts";
import { cgroupProcesses } from "../../src/devcluster/node/cgroups.ts";
import { containerdPaths, shimProcesses } from "../../src/devcluster/node/containerd.ts";
import { startLocalCluster } from "../../src/devcluster/node/local-cluster.ts";
import { mountsUnder } from "../../src/devcluster/node/mounts.ts";
import { resolveNodeBinaries } from "../../src/devcluster/node/node-binaries.ts";
import {
  isMountPoint,
  readSlotRecords,
  type SlotRecord,
  slotRecordPath,
} from "../../src/devcluster/node/node-slot.ts";
import { sweepDeadNodes } from "../../src/devcluster/node/teardown.ts";
import { repoRoot } from "../support/cluster.ts";
import { waitFor } from "../support/wait.ts";

/** Exists and is not a zombie (killed pods are reparented to init, which reaps them when it gets to it). */
const running = (pid: number): boolean => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
};

const netnsMountedBefore = readSlotRecords().length === 0 && isMountPoint("/run/netns");

describe("what a local node leaves behind", () => {
  it("nothing when its process dies: a watchdog sweeps up pods, shims, mounts, namespace, routes and cgroup", async () => {
    const nodeBinaries = await resolveNodeBinaries({ buildTimeoutMs: 45 * 60_000 });
    const pause = await buildImage(pauseRecipe(nodeBinaries.pause), defaultImageCacheDir());
    const busybox = await buildImage(busyboxRecipe("/bin/busybox"), defaultImageCacheDir());
    const child = spawn(
      process.execPath,
      [
        join(repoRoot, "test", "support", "local-node-process.ts"),
        JSON.stringify({ nodeBinaries, sandboxImage: pause, images: [busybox.archive] }),
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    const exited = new Promise((resolve) => child.on("exit", resolve));
    const line = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout }).once("line", resolve);
      child.once("exit", (code) =>
        reject(new Error(`the cluster process exited (${String(code)}) before it was ready`)),
      );
    });
    const { kubeconfigPath, footprint } = JSON.parse(line) as {
      kubeconfigPath: string;
      footprint: SlotRecord;
    };
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfigPath);
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespacedPod({
      namespace: "default",
      body: {
        metadata: { name: "sleeper" },
        spec: {
          containers: [
            { name: "main", image: busybox.ref, imagePullPolicy: "Never", command: ["sleep", "3600"] },
          ],
        },
      },
    });
    await waitFor(
      "pod sleeper Running",
      async () =>
        (await core.readNamespacedPod({ namespace: "default", name: "sleeper" })).status?.phase === "Running"
          ? true
          : undefined,
      60_000,
      250,
    );

    const podProcesses = cgroupProcesses(footprint.cgroupName);
    expect(podProcesses.length).toBeGreaterThan(0);
    child.kill("SIGKILL");
    await exited;
    // Its pod and the containerd shims outlive it; its watchdog (sweep-watchdog.ts) sees it gone and
    // sweeps up from the slot record, as the next start would.
    await waitFor(
      "the dead run's slot record to be swept",
      () => (existsSync(slotRecordPath(footprint.slot)) ? undefined : true),
      60_000,
      250,
    );
    expect(await sweepDeadNodes(() => {})).toEqual([]);
    expect(cgroupProcesses(footprint.cgroupName)).toEqual([]);
    expect(podProcesses.filter(running)).toEqual([]);
    expect(shimProcesses(containerdPaths(footprint.dir))).toEqual([]);
    expect(existsSync(`/run/netns/${footprint.netns}`)).toBe(false);
    expect(existsSync(`/sys/class/net/${footprint.hostInterface}`)).toBe(false);
    expect(mountsUnder(footprint.dir)).toEqual([]);
    expect(existsSync(footprint.dir)).toBe(false);
    // `ip netns add` makes /run/netns a mount point; the last node to go undoes that.
    if (readSlotRecords().length === 0 && !netnsMountedBefore) expect(isMountPoint("/run/netns")).toBe(false);
  }, 180_000);

  it("nothing when its start fails: no control plane, containerd or slot", async () => {
    const nodeBinaries = await resolveNodeBinaries({ buildTimeoutMs: 45 * 60_000 });
    const pause = await buildImage(pauseRecipe(nodeBinaries.pause), defaultImageCacheDir());
    /** This process's children that are cluster components (other test files run their own clusters). */
    const clusterChildren = (): string[] =>
      readdirSync("/proc")
        .filter((entry) => /^\d+$/.test(entry))
        .flatMap((pid) => {
          try {
            const status = readFileSync(`/proc/${pid}/status`, "utf8");
            if (Number(/PPid:\s+(\d+)/.exec(status)?.[1]) !== process.pid || !running(Number(pid))) return [];
            const args = readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
            return /kube-apiserver|etcd|containerd|kubelet/.test(args) ? [`${pid} ${args}`] : [];
          } catch {
            return [];
          }
        });
    expect(clusterChildren()).toEqual([]);

    // The image to load is a FIFO: containerd's import waits on it until the kube-apiserver listens
    // (but is not ready yet), and then fails on what it reads, while the control plane is starting.
    const fifo = join(mkdtempSync(join(tmpdir(), "opstask-test-")), "image.tar");
    execFileSync("mkfifo", [fifo]);
    const outcome = startLocalCluster({ nodeBinaries, sandboxImage: pause, images: [fifo] }).then(
      () => new Error("the cluster started"),
      (error: unknown) => error,
    );
    await waitFor(
      "this worker's kube-apiserver listening",
      () => {
        const apiservers = clusterChildren().filter((p) => p.includes("kube-apiserver"));
        const listening = execFileSync("ss", ["-ltnpH"], { encoding: "utf8" });
        return apiservers.some((p) => listening.includes(`pid=${p.split(" ")[0]},`)) ? true : undefined;
      },
      60_000,
      50,
    );
    // Non-blocking (ENXIO until the import opens it): never hangs should the start fail otherwise.
    const writer = await waitFor(
      "the image import reading the FIFO",
      () => {
        try {
          return openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
        } catch {
          return undefined;
        }
      },
      30_000,
      50,
    );
    writeSync(writer, "not an image archive");
    closeSync(writer);
    const error = await outcome;
    expect(error).toBeInstanceOf(Error);
    expect(String(error)).toMatch(/ctr .*images import/);
    rmSync(dirname(fifo), { recursive: true, force: true });
    await new Promise((resolve) => setTimeout(resolve, 15_000)); // anything left would be up by now
    expect(clusterChildren()).toEqual([]);
    expect(readSlotRecords().filter((record) => record.ownerPid === process.pid)).toEqual([]);
  }, 180_000);
});
