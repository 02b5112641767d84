/**
 * Server-side apply of arbitrary manifests (RBAC, namespaces, ConfigMaps, …) through opstask's own
 * client: the resource of each object comes from API discovery, so any kind the server serves can be
 * applied, as `kubectl apply --server-side` does.
 */
import { parseAllDocuments } from "yaml";
import type { KubeClient } from "../../kube/kube-client.ts";

interface Served {
  readonly name: string;
  readonly kind: string;
  readonly namespaced: boolean;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const textOf = (value: unknown): string | undefined =>
  typeof value === "string" && value !== "" ? value : undefined;

/** The objects of a YAML text (multi-document), or the objects given; empty documents are skipped. */
export const manifestObjects = (
  manifests: string | ReadonlyArray<object>,
): ReadonlyArray<Record<string, unknown>> => {
  if (typeof manifests !== "string") return manifests.map((object) => ({ ...object }));
  return parseAllDocuments(manifests).flatMap((document) => {
    if (document.errors.length > 0)
      throw new Error(`apply: the YAML does not parse: ${document.errors.map((e) => e.message).join("; ")}`);
    const object: unknown = document.toJS();
    if (object === null || object === undefined) return [];
    if (!isRecord(object)) throw new Error("apply: every YAML document must be an object (a manifest)");
    return [object];
  });
};

/** Applies each object in order with server-side apply (field manager `fieldManager`, conflicts forced). */
export const applyManifests = async (
  client: KubeClient,
  manifests: string | ReadonlyArray<object>,
  fieldManager: string,
): Promise<void> => {
  const discovered = new Map<string, ReadonlyArray<Served>>();
  const servedOf = async (apiVersion: string): Promise<ReadonlyArray<Served>> => {
    const known = discovered.get(apiVersion);
    if (known !== undefined) return known;
    const path = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
    const { body } = await client.request({ method: "GET", path });
    const resources = isRecord(body) && Array.isArray(body.resources) ? body.resources : [];
    const served = resources.flatMap((resource: unknown) =>
      isRecord(resource) && typeof resource.name === "string" && typeof resource.kind === "string"
        ? [{ name: resource.name, kind: resource.kind, namespaced: resource.namespaced === true }]
        : [],
    );
    discovered.set(apiVersion, served);
    return served;
  };
  for (const object of manifestObjects(manifests)) {
    const apiVersion = textOf(object.apiVersion);
    const kind = textOf(object.kind);
    const metadata = isRecord(object.metadata) ? object.metadata : {};
    const name = textOf(metadata.name);
    if (apiVersion === undefined || kind === undefined || name === undefined)
      throw new Error("apply: every manifest needs apiVersion, kind and metadata.name");
    const resource = (await servedOf(apiVersion)).find(
      (candidate) => candidate.kind === kind && !candidate.name.includes("/"),
    );
    if (resource === undefined)
      throw new Error(
        `apply: ${apiVersion} ${kind} is not served by this API server (is its CRD installed?)`,
      );
    const base = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
    const namespace = textOf(metadata.namespace) ?? "default";
    const collection = resource.namespaced
      ? `${base}/namespaces/${encodeURIComponent(namespace)}/${resource.name}`
      : `${base}/${resource.name}`;
    await client.request({
      method: "PATCH",
      path: `${collection}/${encodeURIComponent(name)}`,
      query: { fieldManager, force: true },
      contentType: "application/apply-patch+yaml",
      body: JSON.stringify(object),
    });
  }
};
