/**
 * The RBAC of a kind's controller, exactly what it calls: the task informer LISTs and WATCHes, the
 * finalizer is a metadata PATCH, a task past its TTL is DELETEd, status is PATCHed on its subresource,
 * one Event is CREATEd per state change, the leader-election Lease is created, read and renewed, and
 * secure metrics ask the API server to review tokens. Plus the rules the kind declares for its
 * handlers (`rbacRules`). Nothing else: a test runs the controller under exactly these rules.
 */
import type { PolicyRule } from "../../api/policy-rule.ts";
import type { ResourceRef } from "../../reconcile/task-kind.ts";

export interface ControllerIdentity {
  /** The ServiceAccount, ClusterRole and Deployment name. */
  readonly name: string;
  readonly namespace: string;
  /** The leader-election Lease (runTaskController's `leaderElection.name`). */
  readonly leaseName: string;
  /** Secure metrics (TokenReview and SubjectAccessReview of each scrape). */
  readonly secureMetrics: boolean;
}

export const labelsOf = (name: string) => ({
  "app.kubernetes.io/name": name,
  "app.kubernetes.io/component": "controller",
});

/** The ClusterRole's rules, each with the reason written above it. */
export const controllerRules = (
  resource: ResourceRef,
  handlerRules: ReadonlyArray<PolicyRule>,
  secureMetrics: boolean,
): ReadonlyArray<PolicyRule> => [
  {
    apiGroups: [resource.group],
    resources: [resource.plural],
    verbs: ["list", "watch", "patch", "delete"],
    reason:
      "The task informer LISTs and WATCHes; the finalizer is a merge PATCH of metadata; a task past its TTL is DELETEd.",
  },
  {
    apiGroups: [resource.group],
    resources: [`${resource.plural}/status`],
    verbs: ["patch"],
    reason: "Status is written with merge patches to the status subresource only.",
  },
  {
    apiGroups: ["events.k8s.io"],
    resources: ["events"],
    verbs: ["create"],
    reason: "One Event per state change of a task, in the task's namespace.",
  },
  ...(secureMetrics
    ? [
        {
          apiGroups: ["authentication.k8s.io"],
          resources: ["tokenreviews"],
          verbs: ["create"],
          reason: "Secure metrics: the bearer token of each scrape is reviewed by the API server.",
        },
        {
          apiGroups: ["authorization.k8s.io"],
          resources: ["subjectaccessreviews"],
          verbs: ["create"],
          reason: "Secure metrics: the scraper must be allowed `get` on the /metrics path.",
        },
      ]
    : []),
  ...handlerRules.map((rule) => ({
    ...rule,
    reason: `Declared by the kind (rbacRules): ${rule.reason ?? "no reason given"}`,
  })),
];

/** The Lease rules: a create cannot be limited by name, so it stands alone; the rest is for one Lease. */
export const leaseRules = (leaseName: string): ReadonlyArray<PolicyRule> => [
  {
    apiGroups: ["coordination.k8s.io"],
    resources: ["leases"],
    verbs: ["create"],
    reason: "Leader election creates its Lease when absent (a create cannot be limited by name).",
  },
  {
    apiGroups: ["coordination.k8s.io"],
    resources: ["leases"],
    resourceNames: [leaseName],
    verbs: ["get", "patch"],
    reason: "It reads the Lease and renews, takes over and releases it with merge patches.",
  },
];

const ruleObject = (rule: PolicyRule) => ({
  apiGroups: [...rule.apiGroups],
  resources: [...rule.resources],
  ...(rule.resourceNames === undefined ? {} : { resourceNames: [...rule.resourceNames] }),
  verbs: [...rule.verbs],
});

export interface RbacObjects {
  readonly clusterRole: Record<string, unknown>;
  readonly clusterRoleBinding: Record<string, unknown>;
  readonly leaseRole: Record<string, unknown>;
  readonly leaseRoleBinding: Record<string, unknown>;
  /** The reasons of the ClusterRole's and the Lease Role's rules, in order (for comments). */
  readonly reasons: { readonly cluster: ReadonlyArray<string>; readonly lease: ReadonlyArray<string> };
}

export const controllerRbac = (
  resource: ResourceRef,
  handlerRules: ReadonlyArray<PolicyRule>,
  identity: ControllerIdentity,
): RbacObjects => {
  const cluster = controllerRules(resource, handlerRules, identity.secureMetrics);
  const lease = leaseRules(identity.leaseName);
  const labels = labelsOf(identity.name);
  const subject = { kind: "ServiceAccount", name: identity.name, namespace: identity.namespace };
  const leaseRoleName = `${identity.name}-leader-election`;
  return {
    clusterRole: {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: { name: identity.name, labels },
      rules: cluster.map(ruleObject),
    },
    clusterRoleBinding: {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: { name: identity.name, labels },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name: identity.name },
      subjects: [subject],
    },
    leaseRole: {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "Role",
      metadata: { name: leaseRoleName, namespace: identity.namespace, labels },
      rules: lease.map(ruleObject),
    },
    leaseRoleBinding: {
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "RoleBinding",
      metadata: { name: leaseRoleName, namespace: identity.namespace, labels },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: leaseRoleName },
      subjects: [subject],
    },
    reasons: {
      cluster: cluster.map((rule) => rule.reason ?? ""),
      lease: lease.map((rule) => rule.reason ?? ""),
    },
  };
};
