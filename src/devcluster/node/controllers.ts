// kube-scheduler and kube-controller-manager on the host (they only talk to the kube-apiserver):
// no serving ports, no leader election (one of each). The controller-manager's ServiceAccount
// controllers create every namespace's `default` ServiceAccount and the kube-root-ca.crt ConfigMap
// that pods' projected API tokens come with.
import { type ManagedProcess, startProcess } from "../process.ts";
import { SERVICE_CIDR } from "./network.ts";

export interface ControllersOptions {
  readonly schedulerBinary: string;
  readonly controllerManagerBinary: string;
  readonly dir: string;
  readonly schedulerKubeconfig: string;
  readonly controllerManagerKubeconfig: string;
  /** The kube-apiserver's service-account signing key (legacy token Secrets). */
  readonly serviceAccountKey: string;
  /** CA bundle pods are given to verify the kube-apiserver. */
  readonly rootCaFile: string;
  readonly onLine?: (component: string) => (line: string) => void;
}

export function startControllers(o: ControllersOptions): {
  readonly scheduler: ManagedProcess;
  readonly controllerManager: ManagedProcess;
} {
  const scheduler = startProcess({
    name: "kube-scheduler",
    command: o.schedulerBinary,
    args: [`--kubeconfig=${o.schedulerKubeconfig}`, "--secure-port=0", "--leader-elect=false", "-v=1"],
    ...(o.onLine !== undefined ? { onLine: o.onLine("kube-scheduler") } : {}),
  });
  const controllerManager = startProcess({
    name: "kube-controller-manager",
    command: o.controllerManagerBinary,
    args: [
      `--kubeconfig=${o.controllerManagerKubeconfig}`,
      "--secure-port=0",
      "--leader-elect=false",
      `--service-cluster-ip-range=${SERVICE_CIDR}`,
      `--service-account-private-key-file=${o.serviceAccountKey}`,
      `--root-ca-file=${o.rootCaFile}`,
      "--controllers=*",
      "-v=1",
    ],
    ...(o.onLine !== undefined ? { onLine: o.onLine("kube-controller-manager") } : {}),
  });
  return { scheduler, controllerManager };
}
