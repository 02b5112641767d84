/**
 * deploy/'s RBAC broken on purpose, for the image check's negative case: the manifests themselves are
 * test/support/deploy-manifests.ts's (deploy/ rendered as `kubectl apply -k` would).
 */
import type { V1ClusterRole } from "@kubernetes/client-node";
import type { KubeManifest } from "../support/kustomize.ts";

/** A ClusterRole rule edit: `verb` removed from every rule naming `resource` (e.g. etcdopstasks/status). */
export interface RbacBreak {
  readonly resource: string;
  readonly verb: string;
}

/** The manifests with `broken` applied to every ClusterRole; throws when it matches no rule. */
export const withBrokenRbac = (manifests: readonly KubeManifest[], broken: RbacBreak): KubeManifest[] => {
  let matched = false;
  const edited = manifests.map((manifest) => {
    if (manifest.kind !== "ClusterRole") return manifest;
    const role = manifest as KubeManifest & Pick<V1ClusterRole, "rules">;
    const rules = (role.rules ?? [])
      .map((rule) => {
        if (!(rule.resources ?? []).includes(broken.resource) || !rule.verbs.includes(broken.verb))
          return rule;
        matched = true;
        return { ...rule, verbs: rule.verbs.filter((verb) => verb !== broken.verb) };
      })
      .filter((rule) => rule.verbs.length > 0);
    return { ...role, rules };
  });
  if (!matched) throw new Error(`no ClusterRole rule grants ${broken.verb} on ${broken.resource}`);
  return edited;
};
