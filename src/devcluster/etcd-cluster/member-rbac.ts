// What etcd-druid creates so that a member's backup-restore sidecar can read the cluster it is part
// of (druid's serviceaccount, role and rolebinding components, with druid's names and rules): on a
// multi-member cluster the sidecar reads its StatefulSet (is this a scale-up?) and its member Lease
// while it initializes the data directory. Only the lab's etcd-wrapper mode needs them (manifests.ts).
import type { V1Role, V1RoleBinding, V1ServiceAccount } from "@kubernetes/client-node";
import { defaultLabels } from "./manifests.ts";

export const memberServiceAccountName = (etcd: string) => etcd;
const roleName = (etcd: string) => `druid.gardener.cloud:etcd:${etcd}`;

export const memberRbac = (
  etcd: string,
  namespace: string,
): { serviceAccount: V1ServiceAccount; role: V1Role; roleBinding: V1RoleBinding } => {
  const metadata = (name: string, component: string) => ({
    name,
    namespace,
    labels: {
      ...defaultLabels(etcd),
      "app.kubernetes.io/component": component,
      "app.kubernetes.io/name": etcd,
    },
  });
  return {
    serviceAccount: {
      apiVersion: "v1",
      kind: "ServiceAccount",
      metadata: metadata(memberServiceAccountName(etcd), "etcd-service-account"),
      automountServiceAccountToken: true,
    },
    role: {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: metadata(roleName(etcd), "etcd-druid-role"),
      rules: [
        {
          apiGroups: ["coordination.k8s.io"],
          resources: ["leases"],
          verbs: ["get", "list", "patch", "update", "watch"],
        },
        {
          apiGroups: ["apps"],
          resources: ["statefulsets"],
          verbs: ["get", "list", "patch", "update", "watch"],
        },
        { apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "watch"] },
      ],
    },
    roleBinding: {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: metadata(roleName(etcd), "etcd-role-binding"),
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: roleName(etcd) },
      subjects: [{ kind: "ServiceAccount", name: memberServiceAccountName(etcd), namespace }],
    },
  };
};
