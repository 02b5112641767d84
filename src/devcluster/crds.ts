// Installing CustomResourceDefinitions from YAML files and waiting until they are usable.
//
// Pitfall: client-node's typed APIs serialise request bodies through its generated models, which
// read camelCase properties (xKubernetesValidations, _default, ...). A plain object parsed from YAML
// has the wire names ("x-kubernetes-validations", "default") and those are silently DROPPED. So the
// parsed documents are first turned into models with client-node's own `loadYaml` (JSON is YAML).
import { readFileSync } from "node:fs";
import {
  ApiException,
  ApiextensionsV1Api,
  CustomObjectsApi,
  type KubeConfig,
  loadYaml,
  type V1CustomResourceDefinition,
} from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import { type Deadline, pollUntil } from "./deadline.ts";

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** Every CustomResourceDefinition document in the given YAML files (other kinds are rejected). */
export function readCrdFiles(paths: readonly string[]): V1CustomResourceDefinition[] {
  const crds: V1CustomResourceDefinition[] = [];
  for (const path of paths) {
    for (const doc of parseAllDocuments(readFileSync(path, "utf8"))) {
      if (doc.errors.length > 0) throw new Error(`${path}: ${doc.errors.map((e) => e.message).join("; ")}`);
      const raw: unknown = doc.toJS();
      if (raw === null || raw === undefined) continue;
      if (!isRecord(raw) || raw.kind !== "CustomResourceDefinition") {
        throw new Error(`${path}: expected only CustomResourceDefinition documents`);
      }
      crds.push(loadYaml<V1CustomResourceDefinition>(JSON.stringify(raw)));
    }
  }
  return crds;
}

async function createOrReplace(api: ApiextensionsV1Api, crd: V1CustomResourceDefinition): Promise<void> {
  try {
    await api.createCustomResourceDefinition({ body: crd });
  } catch (err) {
    if (!(err instanceof ApiException) || err.code !== 409) throw err;
    const name = crd.metadata?.name ?? "";
    const existing = await api.readCustomResourceDefinition({ name });
    const body: V1CustomResourceDefinition = {
      ...crd,
      metadata: { ...crd.metadata, resourceVersion: existing.metadata?.resourceVersion ?? "" },
    };
    await api.replaceCustomResourceDefinition({ name, body });
  }
}

const conditionTrue = (crd: V1CustomResourceDefinition, type: string): boolean =>
  (crd.status?.conditions ?? []).some((c) => c.type === type && c.status === "True");

/**
 * Creates (or replaces) the CRDs and waits until each is Established with accepted names and every
 * served version answers a LIST.
 */
export async function applyCrds(
  kc: KubeConfig,
  crds: readonly V1CustomResourceDefinition[],
  deadline: Deadline,
): Promise<void> {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const objects = kc.makeApiClient(CustomObjectsApi);
  for (const crd of crds) await createOrReplace(api, crd);
  for (const crd of crds) {
    const name = crd.metadata?.name ?? "";
    await pollUntil(
      async () => {
        const current = await api.readCustomResourceDefinition({ name });
        return conditionTrue(current, "Established") && conditionTrue(current, "NamesAccepted")
          ? true
          : undefined;
      },
      { deadline, what: `CRD ${name} Established`, intervalMs: 100 },
    );
    for (const version of crd.spec.versions.filter((v) => v.served)) {
      await pollUntil(
        async () => {
          await objects.listClusterCustomObject({
            group: crd.spec.group,
            version: version.name,
            plural: crd.spec.names.plural,
            limit: 1,
          });
          return true;
        },
        {
          deadline,
          what: `${crd.spec.names.plural}.${crd.spec.group}/${version.name} served`,
          intervalMs: 100,
        },
      );
    }
  }
}
