// Removing everything a node added to the host, from its slot record alone: used by stop() after the
// components were asked to stop, and for the leftovers of an earlier run whose process died (then
// nothing was asked to stop). Order: processes (pods, shims, anything in the namespace), then mounts
// and the pods' network namespaces, then the node's namespace with its routes, the cgroup, the host
// sysctls, and the files the kubelet and the CNI library write outside the node's directory.
import { existsSync, readdirSync, readlinkSync, rmdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { sleep } from "../deadline.ts";
import { cgroupProcesses, removeNodeCgroup } from "./cgroups.ts";
import { removeCniResults } from "./cni-results.ts";
import { tryCommand } from "./command.ts";
import { containerdPaths, removeShimLeftovers, sandboxIds, shimProcesses } from "./containerd.ts";
import { restoreSysctls } from "./host-sysctls.ts";
import { podNetworkNamespaces, removeNetworkNamespaceFiles, unmountUnder } from "./mounts.ts";
import { removeNodeNetwork } from "./network.ts";
import { isMountPoint, ownerAlive, readSlotRecords, releaseSlot, type SlotRecord } from "./node-slot.ts";

/** PIDs of processes whose network namespace is the node's. */
export function namespaceProcesses(netns: string): number[] {
  let inode: number;
  try {
    inode = statSync(`/run/netns/${netns}`).ino;
  } catch {
    return [];
  }
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readlinkSync(`/proc/${entry}/ns/net`) === `net:[${inode}]`) pids.push(Number(entry));
    } catch {
      // exited meanwhile, or a kernel thread
    }
  }
  return pids;
}

const killAll = (pids: readonly number[]): void => {
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone
    }
  }
};

/** Kills and waits (bounded) until `find` returns no process. */
async function killUntilGone(find: () => number[], timeoutMs: number): Promise<number[]> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const pids = find();
    if (pids.length === 0 || Date.now() >= end) return pids;
    killAll(pids);
    await sleep(100);
  }
}

/** Every host-side trace of the node in `record`; returns what could not be removed (empty: clean). */
export async function cleanUpNode(record: SlotRecord): Promise<string[]> {
  const problems: string[] = [];
  const paths = containerdPaths(record.dir);
  // Pods first (their processes are in the node's cgroup), then the shims and anything else in the
  // node's namespace (the kubelet, containerd and their helpers, should they still run).
  const left = await killUntilGone(
    () => [
      ...cgroupProcesses(record.cgroupName),
      ...shimProcesses(paths),
      ...namespaceProcesses(record.netns),
    ],
    10_000,
  );
  if (left.length > 0) problems.push(`processes still running: ${left.join(", ")}`);

  const podNamespaces = existsSync(paths.state) ? podNetworkNamespaces(paths.state) : [];
  const sandboxes = sandboxIds(paths);
  problems.push(...(await unmountUnder(record.dir)));
  problems.push(...(await removeNetworkNamespaceFiles(podNamespaces)));
  if (existsSync(paths.state)) removeShimLeftovers(paths);

  problems.push(...(await removeNodeNetwork(record)));
  // A cgroup can be removed only once its last process has been reaped.
  let cgroupProblems: string[] = [];
  for (let attempt = 0; attempt < 20; attempt++) {
    cgroupProblems = removeNodeCgroup(record.cgroupName);
    if (cgroupProblems.length === 0) break;
    await sleep(100);
  }
  problems.push(...cgroupProblems);
  // Host-wide state shared with other nodes running now is left to the last of them.
  const others = readSlotRecords().filter((other) => other.slot !== record.slot && ownerAlive(other));
  if (others.length === 0 && record.sysctls !== undefined) problems.push(...restoreSysctls(record.sysctls));
  await removeHostFiles(record, others.length === 0);
  problems.push(...removeCniResults(sandboxes, others.length === 0));
  rmSync(record.dir, { recursive: true, force: true });
  releaseSlot(record.slot);
  return problems;
}

/**
 * Files at fixed host paths: the kubelet's links in /var/log/containers (to its pod logs) and its
 * device-plugin socket (shared by every kubelet on the machine), and the mount `ip netns add` makes
 * of /run/netns; shared ones are removed only when no other node is running.
 */
async function removeHostFiles(record: SlotRecord, lastNode: boolean): Promise<void> {
  const podLogs = join(record.dir, "kubelet", "pod-logs");
  const containerLogs = "/var/log/containers";
  if (existsSync(containerLogs)) {
    for (const name of readdirSync(containerLogs)) {
      try {
        if (readlinkSync(join(containerLogs, name)).startsWith(`${podLogs}/`))
          rmSync(join(containerLogs, name), { force: true });
      } catch {
        // not a link
      }
    }
  }
  if (lastNode && !record.netnsDirMounted) await unmountNetnsDir();
  if (lastNode) {
    rmSync("/var/lib/kubelet/device-plugins/kubelet.sock", { force: true });
    for (const dir of ["/var/lib/kubelet/device-plugins", "/var/lib/kubelet"]) {
      try {
        if (existsSync(dir) && readdirSync(dir).length === 0) rmSync(dir, { recursive: true });
      } catch {
        // in use
      }
    }
  }
}

/** Unmounts and removes /run/netns when no namespace is left in it. */
async function unmountNetnsDir(): Promise<void> {
  const dir = "/run/netns";
  if (!existsSync(dir) || readdirSync(dir).length > 0) return;
  if (isMountPoint(dir)) await tryCommand("umount", [dir]);
  try {
    rmdirSync(dir);
  } catch {
    // in use again
  }
}

/** Cleans up after earlier runs whose owning process is gone; returns what it did not manage. */
export async function sweepDeadNodes(log: (line: string) => void): Promise<string[]> {
  const problems: string[] = [];
  for (const record of readSlotRecords()) {
    if (ownerAlive(record)) continue;
    log(`local node: cleaning up slot ${record.slot} left by process ${record.ownerPid} (no longer running)`);
    problems.push(...(await cleanUpNode(record)));
  }
  return problems;
}
