/**
 * The controller's memory and CPU as the node sees them: the lab (test/e2e/support/start-lab.ts:
 * a local node, a 3-member etcd cluster in pods, the controller deployed from deploy/ with two
 * replicas) and the leader's container cgroup, read directly (cgroup v1 memory and cpuacct, or v2).
 * Prints figures; asserts nothing.
 *
 *   scripts/bench node-pod [--idle-seconds 60] [--burst 300]
 *
 * Rows: idle (the minute after both replicas were Ready), then a burst of `--burst` snapshot tasks
 * (each for an Etcd of its own that does not exist, so each is admitted, Rejected and TTL-deleted
 * without touching etcd: the controller's own work), measured from the first create until every
 * task was finished, then 30 s after. Memory: the cgroup's working set (usage minus inactive file
 * pages, what the kubelet evicts on) and its peak; CPU: cpuacct / cpu.stat seconds. A page of the
 * shared image files (Node's binary) is charged to the cgroup that read it first, often the other
 * replica's: the working set can be well below the process's RSS, which counts them all.
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CoreV1Api, CustomObjectsApi, type KubeConfig, type V1Pod } from "@kubernetes/client-node";
import { startLab } from "../test/e2e/support/start-lab.ts";
import { intArg } from "./args.ts";

const idleSeconds = intArg("idle-seconds", 60);
const burst = intArg("burst", 300);
const tasks = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcdopstasks" };

/** The directory of `containerId` under a cgroup hierarchy (searched a few levels deep). */
const findCgroup = (root: string, containerId: string, depth = 7): string | undefined => {
  let entries: string[];
  try {
    entries = readdirSync(root);
  } catch {
    return undefined;
  }
  for (const entry of entries) {
    const path = join(root, entry);
    if (entry.includes(containerId) && statSync(path).isDirectory()) return path;
  }
  if (depth === 0) return undefined;
  for (const entry of entries) {
    const path = join(root, entry);
    if (!statSync(path, { throwIfNoEntry: false })?.isDirectory()) continue;
    const found = findCgroup(path, containerId, depth - 1);
    if (found !== undefined) return found;
  }
  return undefined;
};

interface ContainerCgroup {
  /** Working set and peak, bytes; CPU, seconds. */
  read(): { workingSet: number; peak: number; cpuSeconds: number; rss: number; fileMapped: number };
  resetPeak(): void;
}

const statOf = (file: string): Map<string, number> =>
  new Map(
    readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .map((line) => {
        const [key = "", value = "0"] = line.split(" ");
        return [key, Number(value)];
      }),
  );

const containerCgroup = (containerId: string): ContainerCgroup => {
  const v1Memory = findCgroup("/sys/fs/cgroup/memory", containerId);
  const v1Cpu =
    findCgroup("/sys/fs/cgroup/cpuacct", containerId) ??
    findCgroup("/sys/fs/cgroup/cpu,cpuacct", containerId);
  if (v1Memory !== undefined && v1Cpu !== undefined) {
    return {
      read: () => {
        const stat = statOf(join(v1Memory, "memory.stat"));
        const usage = Number(readFileSync(join(v1Memory, "memory.usage_in_bytes"), "utf8"));
        return {
          workingSet: usage - (stat.get("total_inactive_file") ?? 0),
          peak: Number(readFileSync(join(v1Memory, "memory.max_usage_in_bytes"), "utf8")),
          rss: stat.get("total_rss") ?? 0,
          fileMapped: stat.get("total_mapped_file") ?? 0,
          cpuSeconds: Number(readFileSync(join(v1Cpu, "cpuacct.usage"), "utf8")) / 1e9,
        };
      },
      resetPeak: () => writeFileSync(join(v1Memory, "memory.max_usage_in_bytes"), "0"),
    };
  }
  const v2 = findCgroup("/sys/fs/cgroup", containerId);
  if (v2 === undefined) throw new Error(`no cgroup of container ${containerId} under /sys/fs/cgroup`);
  return {
    read: () => {
      const stat = statOf(join(v2, "memory.stat"));
      const usage = Number(readFileSync(join(v2, "memory.current"), "utf8"));
      return {
        workingSet: usage - (stat.get("inactive_file") ?? 0),
        peak: Number(readFileSync(join(v2, "memory.peak"), "utf8")),
        rss: stat.get("anon") ?? 0,
        fileMapped: stat.get("file_mapped") ?? 0,
        cpuSeconds: (statOf(join(v2, "cpu.stat")).get("usage_usec") ?? 0) / 1e6,
      };
    },
    resetPeak: () => writeFileSync(join(v2, "memory.peak"), "0"),
  };
};

const containerIdOf = (pod: V1Pod): string => {
  const id = pod.status?.containerStatuses?.find((status) => status.name === "controller")?.containerID ?? "";
  return id.replace(/^[a-z]+:\/\//, "");
};

const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const createBurst = async (kubeConfig: KubeConfig, namespace: string, count: number): Promise<void> => {
  const api = kubeConfig.makeApiClient(CustomObjectsApi);
  const names = Array.from({ length: count }, (_, i) => `burst-${i}`);
  for (let i = 0; i < names.length; i += 20) {
    await Promise.all(
      names.slice(i, i + 20).map((name) =>
        api.createNamespacedCustomObject({
          ...tasks,
          namespace,
          body: {
            apiVersion: "druid.gardener.cloud/v1alpha1",
            kind: "EtcdOpsTask",
            metadata: { name, namespace },
            spec: {
              etcdName: `absent-${name}`,
              ttlSecondsAfterFinished: 5,
              config: { onDemandSnapshot: { type: "full" } },
            },
          },
        }),
      ),
    );
  }
  // Finished and TTL-deleted: the list is empty again.
  for (;;) {
    const left = (await api.listNamespacedCustomObject({ ...tasks, namespace })) as { items: unknown[] };
    if (left.items.length === 0) return;
    await sleep(500);
  }
};

const lab = startLab();
try {
  const { kubeConfig, leaderPod, etcd, timings, cluster } = await lab.ready;
  console.log(`lab up: ${JSON.stringify(timings)} ms; node ${cluster.nodeName}, leader ${leaderPod}`);
  const pods = await kubeConfig.makeApiClient(CoreV1Api).listNamespacedPod({
    namespace: "opstask-system",
    labelSelector: "app.kubernetes.io/name=opstask",
  });
  const leader = pods.items.find((pod) => pod.metadata?.name === leaderPod);
  if (leader === undefined) throw new Error(`leader pod ${leaderPod} not found`);
  const cgroup = containerCgroup(containerIdOf(leader));

  cgroup.resetPeak();
  const idleStart = cgroup.read();
  await sleep(idleSeconds * 1000);
  const idleEnd = cgroup.read();
  console.log(
    `idle ${idleSeconds} s: working set ${mib(idleEnd.workingSet)}, rss ${mib(idleEnd.rss)}, mapped files ${mib(idleEnd.fileMapped)}, peak ${mib(idleEnd.peak)}, CPU ${(idleEnd.cpuSeconds - idleStart.cpuSeconds).toFixed(3)} s`,
  );

  cgroup.resetPeak();
  const burstStart = cgroup.read();
  const started = Date.now();
  await createBurst(kubeConfig, etcd.spec.namespace, burst);
  const burstEnd = cgroup.read();
  console.log(
    `burst of ${burst} tasks (created, Rejected, TTL-deleted) in ${((Date.now() - started) / 1000).toFixed(1)} s: working set ${mib(burstEnd.workingSet)}, peak ${mib(burstEnd.peak)}, CPU ${(burstEnd.cpuSeconds - burstStart.cpuSeconds).toFixed(3)} s`,
  );
  await sleep(30_000);
  const after = cgroup.read();
  console.log(
    `30 s after the burst: working set ${mib(after.workingSet)}, rss ${mib(after.rss)}, CPU ${(after.cpuSeconds - burstEnd.cpuSeconds).toFixed(3)} s`,
  );
} finally {
  await lab.stop();
}
