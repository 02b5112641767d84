// Cluster DNS: CoreDNS as a process in the node's network namespace, on the bridge's address (the
// pods' gateway). It answers cluster.local from the API and nothing else: the build has no forward
// plugin and other names get NXDOMAIN/REFUSED, so no upstream resolver is ever asked.
// It also answers reverse lookups (PTR) of the pods' and Services' addresses (198.18.0.0/15), as a
// kubeadm cluster's CoreDNS does: etcd with peer client-cert-auth checks a peer's certificate by the
// PTR name of its address (`<pod>.<etcd>-peer.<ns>.svc.cluster.local` against `*.<etcd>-peer.…`).
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type ManagedProcess, startProcess } from "../process.ts";
import type { NodeSlot } from "./node-slot.ts";

export const CLUSTER_DOMAIN = "cluster.local";
/** The reverse zones of 198.18.0.0/15, where the node's pods and Services get their addresses. */
const ReverseZones = ["18.198.in-addr.arpa", "19.198.in-addr.arpa"];

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
    `${CLUSTER_DOMAIN}:53 ${ReverseZones.map((zone) => `${zone}:53`).join(" ")} {
    bind ${bind}
    errors
    ready 127.0.0.1:8181
    health 127.0.0.1:8080
    cache 5
    kubernetes ${CLUSTER_DOMAIN} ${ReverseZones.join(" ")} {
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
