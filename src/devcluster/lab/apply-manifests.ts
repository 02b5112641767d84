/**
 * deploy/ (or one of its overlays) applied to a cluster by server-side apply, as
 * `kubectl apply --server-side -k` would, rendered by kustomize.ts.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import {
  ApiException,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  loadYaml,
  PatchStrategy,
} from "@kubernetes/client-node";
import { defaultRepoRoot } from "../binaries.ts";
import type { KubeManifest } from "./kustomize.ts";

export const deployDir = join(defaultRepoRoot(), "deploy");

/** deploy/crds/*.yaml, for a control plane's `crds`. */
export const deployCrdFiles: readonly string[] = readdirSync(join(deployDir, "crds"))
  .filter((file) => file.endsWith(".yaml"))
  .map((file) => join(deployDir, "crds", file));

/** Server-side apply of `objects`, in order; an object that does not apply fails with its name. */
export const applyManifests = async (
  kc: KubeConfig,
  objects: ReadonlyArray<KubeManifest>,
  fieldManager = "opstask-test",
): Promise<void> => {
  const client = KubernetesObjectApi.makeApiClient(kc);
  for (const object of objects) {
    // client-node serialises bodies through its models, which drop wire names such as
    // `x-kubernetes-int-or-string` from plain objects: load each document into its model first.
    const body = loadYaml<KubernetesObject & { apiVersion: string; kind: string }>(JSON.stringify(object));
    try {
      await client.patch(body, undefined, undefined, fieldManager, true, PatchStrategy.ServerSideApply);
    } catch (error) {
      throw new Error(
        `${object.kind} ${object.metadata.name} did not apply: ${error instanceof ApiException ? String(error.body) : String(error)}`,
      );
    }
  }
};
