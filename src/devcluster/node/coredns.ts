// Cluster DNS: CoreDNS as a process in the node's network namespace, on the bridge's address (the
// pods' gateway). It answers cluster.local from the API and nothing else: the build has no forward
// plugin and other names get NXDOMAIN/REFUSED, so no upstream resolver is ever asked.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type ManagedProcess, startProcess } from "../process.ts";
import type { NodeSlot } from "./node-slot.ts";

export const CLUSTER_DOMAIN = "cluster.local";

export interface CoreDnsOptions {
  readonly binary: string;
  readonly slot: NodeSlot;
  readonly dir: string;
  readonly kubeconfig: string;
  /** The kubeconfig's context. */
  readonly context: string;
  readonly onLine?: (line: string) => void;
}

export function startCoreDns(o: CoreDnsOptions): ManagedProcess {
  const dir = join(o.dir, "coredns");
  mkdirSync(dir, { recursive: true });
  const corefile = join(dir, "Corefile");
  const bind = o.slot.gatewayAddress;
  writeFileSync(
    corefile,
    `${CLUSTER_DOMAIN}:53 {
    bind ${bind}
    errors
    ready 127.0.0.1:8181
    health 127.0.0.1:8080
    cache 5
    kubernetes ${CLUSTER_DOMAIN} {
        kubeconfig ${o.kubeconfig} ${o.context}
        pods insecure
        ttl 5
    }
}
.:53 {
    bind ${bind}
    errors
}
`,
  );
  return startProcess({
    name: "coredns",
    command: "nsenter",
    args: [`--net=/run/netns/${o.slot.netns}`, "--", o.binary, "-conf", corefile],
    ...(o.onLine !== undefined ? { onLine: o.onLine } : {}),
  });
}
