/**
 * An RBAC rule (rbac.authorization.k8s.io/v1 PolicyRule, resource rules only): what a kind declares
 * its handlers need beyond the task resource itself, so that `opstask deploy-artifacts` grants it.
 */
export interface PolicyRule {
  /** `""` for the core group. */
  readonly apiGroups: ReadonlyArray<string>;
  /** Plurals, with a subresource as `pods/log`. */
  readonly resources: ReadonlyArray<string>;
  readonly verbs: ReadonlyArray<string>;
  /** Limits the rule to these objects (not possible for `create`, `list` or `watch`). */
  readonly resourceNames?: ReadonlyArray<string>;
  /** Why the handlers need it: written as a comment above the rule in the generated ClusterRole. */
  readonly reason?: string;
}
