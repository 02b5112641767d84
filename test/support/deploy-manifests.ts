/**
 * deploy/ (or one of its overlays) applied to a test control plane by server-side apply, as
 * `kubectl apply --server-side -k` would, rendered by src/devcluster/lab/kustomize.ts (the lab's `opstask dev --cluster`
 * deploys with it too).
 */
import { join } from "node:path";
import { deployDir } from "../../src/devcluster/lab/apply-manifests.ts";
import { type KubeManifest, renderKustomization } from "../../src/devcluster/lab/kustomize.ts";

export {
  applyManifests,
  deployCrdFiles,
  deployDir,
} from "../../src/devcluster/lab/apply-manifests.ts";

/** The objects of a kustomization under deploy/ (`""` for deploy/ itself). */
export const deployObjects = (overlay = ""): KubeManifest[] => renderKustomization(join(deployDir, overlay));

/** The one object of `kind` (and `name`) among `objects`. */
export const theOne = <T>(objects: ReadonlyArray<KubeManifest>, kind: string, name?: string): T => {
  const found = objects.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  if (found.length !== 1) throw new Error(`expected one ${kind} ${name ?? ""}, found ${found.length}`);
  return found[0] as T;
};
