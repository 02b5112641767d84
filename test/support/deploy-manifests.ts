/**
 * deploy/ (or one of its overlays) applied to a test control plane by server-side apply, as
 * `kubectl apply --server-side -k` would, rendered by test/support/kustomize.ts.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  ApiException,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  loadYaml,
  PatchStrategy,
} from "@kubernetes/client-node";
import { type KubeManifest, renderKustomization } from "./kustomize.ts";

// Not from ./cluster.ts (which loads vitest): the image check runs this module as a plain script too.
export const deployDir = fileURLToPath(new URL("../../deploy", import.meta.url));

/** deploy/crds/*.yaml, for `useControlPlane({ crds })`. */
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

/** The objects of a kustomization under deploy/ (`""` for deploy/ itself). */
export const deployObjects = (overlay = ""): KubeManifest[] => renderKustomization(join(deployDir, overlay));

/** The one object of `kind` (and `name`) among `objects`. */
export const theOne = <T>(objects: ReadonlyArray<KubeManifest>, kind: string, name?: string): T => {
  const found = objects.filter((o) => o.kind === kind && (name === undefined || o.metadata.name === name));
  if (found.length !== 1) throw new Error(`expected one ${kind} ${name ?? ""}, found ${found.length}`);
  return found[0] as T;
};
