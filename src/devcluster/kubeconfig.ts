// Kubeconfig for the local control plane: one cluster (CA = the apiserver's self-signed bundle) and
// token users; as a file for kubectl/`opstask dev`, and as a client-node KubeConfig for tests.
import { writeFileSync } from "node:fs";
import { KubeConfig } from "@kubernetes/client-node";
import { stringify } from "yaml";

export const CLUSTER_NAME = "opstask-dev";

export interface KubeconfigParams {
  readonly server: string;
  readonly caPem: string;
  readonly userName: string;
  readonly token: string;
  readonly namespace?: string;
}

const contextName = (userName: string): string =>
  userName === "admin" ? CLUSTER_NAME : `${CLUSTER_NAME}-${userName.replaceAll(":", "-")}`;

/** The kubeconfig document (kubectl's on-disk format). */
export function kubeconfigDocument(p: KubeconfigParams): Record<string, unknown> {
  const context = contextName(p.userName);
  return {
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      {
        name: CLUSTER_NAME,
        cluster: { server: p.server, "certificate-authority-data": Buffer.from(p.caPem).toString("base64") },
      },
    ],
    users: [{ name: p.userName, user: { token: p.token } }],
    contexts: [
      {
        name: context,
        context: {
          cluster: CLUSTER_NAME,
          user: p.userName,
          ...(p.namespace !== undefined ? { namespace: p.namespace } : {}),
        },
      },
    ],
    "current-context": context,
    preferences: {},
  };
}

export function writeKubeconfig(path: string, p: KubeconfigParams): void {
  writeFileSync(path, stringify(kubeconfigDocument(p)), { mode: 0o600 });
}

export function makeKubeConfig(p: KubeconfigParams): KubeConfig {
  const kc = new KubeConfig();
  const context = contextName(p.userName);
  kc.loadFromOptions({
    clusters: [
      {
        name: CLUSTER_NAME,
        server: p.server,
        caData: Buffer.from(p.caPem).toString("base64"),
        skipTLSVerify: false,
      },
    ],
    users: [{ name: p.userName, token: p.token }],
    contexts: [
      {
        name: context,
        cluster: CLUSTER_NAME,
        user: p.userName,
        ...(p.namespace !== undefined ? { namespace: p.namespace } : {}),
      },
    ],
    currentContext: context,
  });
  return kc;
}
