// The kubelet of the local node, inside the node's network namespace: cgroupfs under the node's own
// cgroup, cgroup v1 allowed, its files in the node's directory (root dir, pod logs), no upstream DNS
// (an empty resolv.conf), its API on the node's address only, anonymous read for the test cluster.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { type ManagedProcess, startProcess } from "../process.ts";
import type { ContainerdPaths } from "./containerd.ts";
import type { NodeSlot } from "./node-slot.ts";

export interface KubeletOptions {
  readonly binary: string;
  readonly slot: NodeSlot;
  readonly dir: string;
  readonly nodeName: string;
  readonly kubeconfig: string;
  readonly containerd: ContainerdPaths;
  /** The cluster DNS server's address (CoreDNS). */
  readonly clusterDns: string;
  readonly maxPods?: number;
  readonly onLine?: (line: string) => void;
}

function kubeletConfiguration(o: KubeletOptions, resolvConf: string): Record<string, unknown> {
  const endpoint = `unix://${o.containerd.socket}`;
  return {
    apiVersion: "kubelet.config.k8s.io/v1beta1",
    kind: "KubeletConfiguration",
    containerRuntimeEndpoint: endpoint,
    imageServiceEndpoint: endpoint,
    cgroupDriver: "cgroupfs",
    cgroupRoot: `/${o.slot.cgroupName}`,
    // These machines run cgroup v1 (hybrid); kubelet 1.35 refuses it unless told otherwise.
    failCgroupV1: false,
    failSwapOn: false,
    address: o.slot.nodeAddress,
    port: 10250,
    readOnlyPort: 0,
    healthzBindAddress: "127.0.0.1",
    healthzPort: 10248,
    // A test node: the apiserver's client is not verified, everything is allowed.
    authentication: { anonymous: { enabled: true }, webhook: { enabled: false }, x509: {} },
    authorization: { mode: "AlwaysAllow" },
    clusterDomain: "cluster.local",
    clusterDNS: [o.clusterDns],
    resolvConf,
    podLogsDir: join(o.dir, "kubelet", "pod-logs"),
    maxPods: o.maxPods ?? 40,
    evictionHard: {
      "memory.available": "100Mi",
      "nodefs.available": "1%",
      "imagefs.available": "1%",
      "nodefs.inodesFree": "1%",
    },
    // Images are loaded locally and cannot be pulled again: never collect them.
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    serializeImagePulls: false,
    registerNode: true,
    nodeStatusUpdateFrequency: "10s",
    syncFrequency: "10s",
    fileCheckFrequency: "10s",
  };
}

/** Writes the kubelet's configuration and starts it in the node's namespace. */
export function startKubelet(o: KubeletOptions): ManagedProcess {
  const dir = join(o.dir, "kubelet");
  mkdirSync(join(dir, "pod-logs"), { recursive: true });
  const resolvConf = join(dir, "resolv.conf");
  writeFileSync(resolvConf, "# no upstream DNS: pods resolve cluster names only\n");
  const config = join(dir, "config.yaml");
  writeFileSync(config, stringify(kubeletConfiguration(o, resolvConf)));
  return startProcess({
    name: "kubelet",
    command: "nsenter",
    args: [
      `--net=/run/netns/${o.slot.netns}`,
      "--",
      o.binary,
      `--config=${config}`,
      `--kubeconfig=${o.kubeconfig}`,
      `--hostname-override=${o.nodeName}`,
      `--node-ip=${o.slot.nodeAddress}`,
      `--root-dir=${join(dir, "root")}`,
      `--cert-dir=${join(dir, "pki")}`,
      "-v=1",
    ],
    ...(o.onLine !== undefined ? { onLine: o.onLine } : {}),
  });
}
