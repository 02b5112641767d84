/**
 * deploy/ as the image check applies it: every manifest the kustomization lists, in its order, each
 * loaded into client-node's model (client-node serialises through its models, which drop wire names
 * such as `x-kubernetes-int-or-string` from plain objects) and applied server-side.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  ApiException,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  loadYaml,
  PatchStrategy,
  type V1ClusterRole,
} from "@kubernetes/client-node";
import { parseAllDocuments, parse as parseYaml } from "yaml";

export type Manifest = KubernetesObject & { readonly apiVersion: string; readonly kind: string };

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

export const loadDeployManifests = (deployDir: string): Manifest[] => {
  const kustomization: unknown = parseYaml(readFileSync(join(deployDir, "kustomization.yaml"), "utf8"));
  if (!isRecord(kustomization) || !Array.isArray(kustomization.resources))
    throw new Error(`${deployDir}/kustomization.yaml has no resources list`);
  return kustomization.resources.map(String).flatMap((file) =>
    parseAllDocuments(readFileSync(join(deployDir, file), "utf8"))
      .map((document): unknown => document.toJS())
      .filter(isRecord)
      .map((object) => {
        if (typeof object.apiVersion !== "string" || typeof object.kind !== "string")
          throw new Error(`deploy/${file}: a document without apiVersion and kind`);
        return loadYaml<Manifest>(JSON.stringify(object));
      }),
  );
};

/** A ClusterRole rule edit: `verb` removed from every rule naming `resource` (e.g. etcdopstasks/status). */
export interface RbacBreak {
  readonly resource: string;
  readonly verb: string;
}

/** The manifests with `broken` applied to every ClusterRole; throws when it matches no rule. */
export const withBrokenRbac = (manifests: readonly Manifest[], broken: RbacBreak): Manifest[] => {
  let matched = false;
  const edited = manifests.map((manifest) => {
    if (manifest.kind !== "ClusterRole") return manifest;
    const role = manifest as V1ClusterRole & Manifest;
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

export const applyManifests = async (
  kc: KubeConfig,
  manifests: readonly Manifest[],
  fieldManager: string,
): Promise<void> => {
  const client = KubernetesObjectApi.makeApiClient(kc);
  for (const manifest of manifests) {
    try {
      await client.patch(manifest, undefined, undefined, fieldManager, true, PatchStrategy.ServerSideApply);
    } catch (error) {
      const detail = error instanceof ApiException ? String(error.body) : String(error);
      throw new Error(`${manifest.kind} ${manifest.metadata?.name} did not apply: ${detail}`);
    }
  }
};
