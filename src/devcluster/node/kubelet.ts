// The kubelet of the local node, inside the node's network namespace: cgroupfs under the node's own
// cgroup, cgroup v1 allowed, its files in the node's directory (root dir, pod logs), no upstream DNS
// (an empty resolv.conf), its API on the node's address only. That address is reachable from the host,
// so by every user of the machine: the API (logs of every pod, the host's /var/log, exec and /run as
// root) takes no anonymous request; it accepts the kube-apiserver's client certificate (a CA made for
// the node) and bearer tokens the apiserver accepts, and asks the apiserver whether each may.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { issueCertificate } from "../certificates.ts";
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
  /** The CA whose client certificates the kubelet accepts (kube-apiserver's: {@link writeKubeletClientTls}). */
  readonly clientCaFile: string;
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
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: o.clientCaFile },
    },
    // A SubjectAccessReview per request (nodes/proxy, nodes/log, …): RBAC decides, as on a real node.
    authorization: { mode: "Webhook" },
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

/** The user kube-apiserver's client certificate names; RBAC lets it use the kubelet's API. */
export const KubeletClientUser = "kube-apiserver-kubelet-client";

export interface KubeletClientTls {
  /** The kubelet's `x509.clientCAFile`. */
  readonly caFile: string;
  /** kube-apiserver's `--kubelet-client-certificate` and `--kubelet-client-key`. */
  readonly certFile: string;
  readonly keyFile: string;
}

/** A CA for the node and kube-apiserver's client certificate from it, written into `dir` (key 0600). */
export function writeKubeletClientTls(dir: string): KubeletClientTls {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const ca = issueCertificate({
    subject: "opstask node kubelet-client CA",
    issuer: undefined,
    ca: true,
    usages: [],
    names: [],
  });
  const client = issueCertificate({
    subject: KubeletClientUser,
    issuer: ca,
    ca: false,
    usages: ["clientAuth"],
    names: [],
  });
  const files = {
    caFile: join(dir, "ca.crt"),
    certFile: join(dir, "client.crt"),
    keyFile: join(dir, "client.key"),
  };
  writeFileSync(files.caFile, ca.certPem);
  writeFileSync(files.certFile, client.certPem);
  writeFileSync(files.keyFile, client.keyPem, { mode: 0o600 });
  return files;
}
