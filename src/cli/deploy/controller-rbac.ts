/**
 * The RBAC of a kind's controller, exactly what it calls: the task informer LISTs and WATCHes, the
 * finalizer is a metadata PATCH, a task past its TTL is DELETEd, status is PATCHed on its subresource,
 * one Event is CREATEd per state change, the leader-election Lease is created, read and renewed, and
 * secure metrics ask the API server to review tokens; steps keep the controller's record of a task in
 * its own namespace; with schedules, the TaskSchedules are watched, their status patched and runs created. Plus the rules the kind declares for its
 * handlers (`rbacRules`), which may not hold wildcards. Nothing else: a test runs the controller under
 * exactly these rules.
 *
 * Bound cluster-wide by default; with `watchNamespaces`, by a RoleBinding in each of them instead (the
 * controller then watches those only), and only the reviews of secure metrics, which are
 * cluster-scoped, stay bound cluster-wide.
 */
import type { PolicyRule } from "../../api/policy-rule.ts";
import type { ResourceRef } from "../../reconcile/task-kind.ts";
import { scheduleResource } from "../../schedule/schedule-spec.ts";

export interface ControllerIdentity {
  /** The ServiceAccount, ClusterRole and Deployment name. */
  readonly name: string;
  readonly namespace: string;
  /** The leader-election Lease (runTaskController's `leaderElection.name`). */
  readonly leaseName: string;
  /** Secure metrics (TokenReview and SubjectAccessReview of each scrape). */
  readonly secureMetrics: boolean;
  /** The namespaces the controller watches and is granted its rules in; absent: all, cluster-wide. */
  readonly watchNamespaces?: ReadonlyArray<string>;
  /** It runs the kind's TaskSchedules too (`runTaskController({ schedules })`). */
  readonly schedules: boolean;
}

/** What a wildcard in each field of a rule grants, and an example of what to list instead. */
const wildcardFields = {
  apiGroups: { grants: "API group", instead: '[""]' },
  resources: { grants: "resource", instead: '["configmaps"]' },
  verbs: { grants: "verb", instead: '["get"]' },
} as const;

/**
 * The first wildcard in a kind's `rbacRules`, as what to fix. A `*` grants every verb, resource or
 * group, those the API server adds later included, to whoever holds the controller's token.
 */
export const rbacRulesWildcard = (rules: ReadonlyArray<PolicyRule>): string | undefined => {
  for (const [index, rule] of rules.entries())
    for (const [field, { grants, instead }] of Object.entries(wildcardFields)) {
      const wild = rule[field as keyof typeof wildcardFields].find(
        (value) => value === "*" || value.split("/").includes("*"),
      );
      if (wild !== undefined)
        return `rbacRules[${index}].${field}: ${JSON.stringify(wild)} grants every ${grants} to whoever holds the controller's token; list the ${field} the handlers use (e.g. ${instead})`;
    }
  return undefined;
};

export const labelsOf = (name: string) => ({
  "app.kubernetes.io/name": name,
  "app.kubernetes.io/component": "controller",
});

/** The reviews of secure metrics: cluster-scoped resources, so bound cluster-wide in either mode. */
const metricsAuthRules: ReadonlyArray<PolicyRule> = [
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
];

/** The schedule controller's: its informer of TaskSchedules, their status, and the runs it creates. */
const scheduleRules = (resource: ResourceRef): ReadonlyArray<PolicyRule> => [
  {
    apiGroups: [scheduleResource.group],
    resources: [scheduleResource.plural],
    verbs: ["list", "watch"],
    reason: "Schedules: the TaskSchedule informer LISTs and WATCHes.",
  },
  {
    apiGroups: [scheduleResource.group],
    resources: [`${scheduleResource.plural}/status`],
    verbs: ["patch"],
    reason: "Schedules: a TaskSchedule's status is written with patches to its status subresource.",
  },
  {
    apiGroups: [resource.group],
    resources: [resource.plural],
    verbs: ["create"],
    reason: "Schedules: a due schedule CREATEs its run (its history limits DELETE old ones).",
  },
];

/**
 * The controller's record of each task (a steps handler's progress, `opstask-record-<task UID>`): in
 * its own namespace, where task authors hold no rights. A create cannot be limited by name, and the
 * names carry UIDs, so the Role is for ConfigMaps in that namespace.
 */
const recordRules: ReadonlyArray<PolicyRule> = [
  {
    apiGroups: [""],
    resources: ["configmaps"],
    verbs: ["create", "get", "patch", "delete"],
    reason:
      "Steps keep their progress in the controller's record of a task, a ConfigMap in this namespace: created at admission, read and patched per step, deleted at cleanup.",
  },
];

/** The ClusterRole's rules, each with the reason written above it. */
export const controllerRules = (
  resource: ResourceRef,
  handlerRules: ReadonlyArray<PolicyRule>,
  secureMetrics: boolean,
  schedules = false,
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
  ...(secureMetrics ? metricsAuthRules : []),
  ...(schedules ? scheduleRules(resource) : []),
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

/** A role and what binds it, with the reasons of its rules in order (for comments). */
export interface BoundRole {
  readonly role: Record<string, unknown>;
  readonly reasons: ReadonlyArray<string>;
  readonly bindings: ReadonlyArray<Record<string, unknown>>;
}

export interface RbacObjects {
  /** The ClusterRole of the controller's rules, bound cluster-wide or in each watched namespace. */
  readonly cluster: BoundRole;
  /** Secure metrics' reviews, when the rules are bound per namespace (else in `cluster`). */
  readonly metricsAuth?: BoundRole;
  /** The leader-election Lease's Role, in the controller's namespace. */
  readonly lease: BoundRole;
  /** The task records' Role, in the controller's namespace. */
  readonly records: BoundRole;
}

export const controllerRbac = (
  resource: ResourceRef,
  handlerRules: ReadonlyArray<PolicyRule>,
  identity: ControllerIdentity,
): RbacObjects => {
  const namespaced = identity.watchNamespaces !== undefined;
  const cluster = controllerRules(
    resource,
    handlerRules,
    identity.secureMetrics && !namespaced,
    identity.schedules,
  );
  const lease = leaseRules(identity.leaseName);
  const labels = labelsOf(identity.name);
  const subjects = [{ kind: "ServiceAccount", name: identity.name, namespace: identity.namespace }];
  const rbac = "rbac.authorization.k8s.io/v1";
  const clusterRole = (name: string, rules: ReadonlyArray<PolicyRule>) => ({
    apiVersion: rbac,
    kind: "ClusterRole",
    metadata: { name, labels },
    rules: rules.map(ruleObject),
  });
  const clusterRoleBinding = (name: string) => ({
    apiVersion: rbac,
    kind: "ClusterRoleBinding",
    metadata: { name, labels },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name },
    subjects,
  });
  const roleBinding = (name: string, namespace: string, roleKind: "Role" | "ClusterRole") => ({
    apiVersion: rbac,
    kind: "RoleBinding",
    metadata: { name, namespace, labels },
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: roleKind, name },
    subjects,
  });
  const leaseRoleName = `${identity.name}-leader-election`;
  const recordsRoleName = `${identity.name}-task-records`;
  const role = (name: string, rules: ReadonlyArray<PolicyRule>): BoundRole => ({
    role: {
      apiVersion: rbac,
      kind: "Role",
      metadata: { name, namespace: identity.namespace, labels },
      rules: rules.map(ruleObject),
    },
    reasons: rules.map((rule) => rule.reason ?? ""),
    bindings: [roleBinding(name, identity.namespace, "Role")],
  });
  const metricsName = `${identity.name}-metrics-auth`;
  return {
    cluster: {
      role: clusterRole(identity.name, cluster),
      reasons: cluster.map((rule) => rule.reason ?? ""),
      bindings:
        identity.watchNamespaces === undefined
          ? [clusterRoleBinding(identity.name)]
          : identity.watchNamespaces.map((namespace) => roleBinding(identity.name, namespace, "ClusterRole")),
    },
    ...(namespaced && identity.secureMetrics
      ? {
          metricsAuth: {
            role: clusterRole(metricsName, metricsAuthRules),
            reasons: metricsAuthRules.map((rule) => rule.reason ?? ""),
            bindings: [clusterRoleBinding(metricsName)],
          },
        }
      : {}),
    lease: role(leaseRoleName, lease),
    records: role(recordsRoleName, recordRules),
  };
};
