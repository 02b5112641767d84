// kube-proxy (iptables mode) inside the node's network namespace: its chains and the sysctls it sets
// are the namespace's. It leaves the conntrack limits (host-wide) alone and serves NodePorts only on
// the node's address.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { type ManagedProcess, startProcess } from "../process.ts";
import type { NodeSlot } from "./node-slot.ts";

export interface KubeProxyOptions {
  readonly binary: string;
  readonly slot: NodeSlot;
  readonly dir: string;
  readonly nodeName: string;
  readonly kubeconfig: string;
  readonly onLine?: (line: string) => void;
}

export function startKubeProxy(o: KubeProxyOptions): ManagedProcess {
  const dir = join(o.dir, "kube-proxy");
  mkdirSync(dir, { recursive: true });
  const config = join(dir, "config.yaml");
  writeFileSync(
    config,
    stringify({
      apiVersion: "kubeproxy.config.k8s.io/v1alpha1",
      kind: "KubeProxyConfiguration",
      clientConnection: { kubeconfig: o.kubeconfig },
      hostnameOverride: o.nodeName,
      mode: "iptables",
      clusterCIDR: o.slot.podCidr,
      bindAddress: o.slot.nodeAddress,
      healthzBindAddress: "127.0.0.1:10256",
      metricsBindAddress: "127.0.0.1:10249",
      nodePortAddresses: [`${o.slot.nodeAddress}/32`],
      conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: "0s", tcpCloseWaitTimeout: "0s" },
    }),
  );
  return startProcess({
    name: "kube-proxy",
    command: "nsenter",
    args: [`--net=/run/netns/${o.slot.netns}`, "--", o.binary, `--config=${config}`, "-v=1"],
    ...(o.onLine !== undefined ? { onLine: o.onLine } : {}),
  });
}
