/**
 * Where a controller finds its cluster when the caller does not say: in-cluster (the pod's service
 * account) when running in a pod, else `$KUBECONFIG` or `~/.kube/config`, as kubectl does.
 */
import { KubeConfig } from "@kubernetes/client-node";

export const defaultKubeConfig = (): KubeConfig => {
  const kubeConfig = new KubeConfig();
  if (process.env.KUBERNETES_SERVICE_HOST !== undefined) kubeConfig.loadFromCluster();
  else kubeConfig.loadFromDefault();
  return kubeConfig;
};
