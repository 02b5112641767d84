/**
 * The part of kustomize that deploy/ and its overlays use, for the lab (`opstask dev --cluster`) and
 * tests that apply them to a real API server without a kustomize binary: `resources` (files, and
 * directories holding a kustomization, in
 * order), `images` (newName/newTag/digest), and `patches` of two kinds: an inline strategic-merge patch
 * that is only `$patch: delete` of one object, and a JSON 6902 patch (`add`/`replace`/`remove`) on
 * the objects its `target` names by kind and name. Anything else is an error, so that an overlay
 * cannot silently use a feature this renderer ignores. When `kubectl` is on PATH, a test compares the
 * two renderings (test/integration/deploy-namespaced.test.ts).
 */
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { immutableJSONPatch, type JSONPatchDocument } from "immutable-json-patch";
import { parseAllDocuments, parse as parseYaml } from "yaml";

export interface KubeManifest {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly [key: string]: unknown };
  readonly [key: string]: unknown;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const asManifest = (value: unknown, where: string): KubeManifest => {
  if (
    !isRecord(value) ||
    typeof value.apiVersion !== "string" ||
    typeof value.kind !== "string" ||
    !isRecord(value.metadata) ||
    typeof value.metadata.name !== "string"
  )
    throw new Error(`${where}: a document without apiVersion, kind and metadata.name`);
  return value as unknown as KubeManifest;
};

const known = new Set(["apiVersion", "kind", "resources", "images", "patches"]);

const applyImages = (objects: KubeManifest[], images: unknown[]): KubeManifest[] =>
  objects.map((object) => {
    const text = JSON.stringify(object);
    let changed = text;
    for (const image of images) {
      if (!isRecord(image) || typeof image.name !== "string")
        throw new Error("images: an entry without name");
      const name = image.name;
      const newName = typeof image.newName === "string" ? image.newName : name;
      const suffix =
        typeof image.digest === "string"
          ? `@${image.digest}`
          : typeof image.newTag === "string"
            ? `:${image.newTag}`
            : "";
      // "image": "<name>" or "<name>:<tag>" or "<name>@<digest>" in container specs.
      const pattern = new RegExp(
        `"image":"${name.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}(?:[:@][^"]*)?"`,
        "g",
      );
      changed = changed.replace(pattern, `"image":"${newName}${suffix}"`);
    }
    return changed === text ? object : (JSON.parse(changed) as KubeManifest);
  });

const applyPatch = (objects: KubeManifest[], patch: unknown, where: string): KubeManifest[] => {
  if (!isRecord(patch)) throw new Error(`${where}: a patch that is not a mapping`);
  if (typeof patch.patch !== "string")
    throw new Error(`${where}: only inline patches (patch:) are supported`);
  const body: unknown = parseYaml(patch.patch);
  if (Array.isArray(body)) {
    const target = patch.target;
    if (!isRecord(target) || typeof target.kind !== "string" || typeof target.name !== "string")
      throw new Error(`${where}: a JSON 6902 patch needs target.kind and target.name`);
    let hits = 0;
    const patched = objects.map((object) => {
      if (object.kind !== target.kind || object.metadata.name !== target.name) return object;
      hits += 1;
      return immutableJSONPatch(object as never, body as JSONPatchDocument) as unknown as KubeManifest;
    });
    if (hits === 0) throw new Error(`${where}: no ${target.kind} ${target.name} to patch`);
    return patched;
  }
  const doc = asManifest(body, where);
  if (
    doc.$patch !== "delete" ||
    Object.keys(doc).some((key) => !["apiVersion", "kind", "metadata", "$patch"].includes(key))
  )
    throw new Error(
      `${where}: of strategic-merge patches only \`$patch: delete\` of a whole object is supported`,
    );
  const kept = objects.filter(
    (object) => !(object.kind === doc.kind && object.metadata.name === doc.metadata.name),
  );
  if (kept.length === objects.length)
    throw new Error(`${where}: no ${doc.kind} ${doc.metadata.name} to delete`);
  return kept;
};

/** The objects `dir`'s kustomization builds, in resource order. */
export const renderKustomization = (dir: string): KubeManifest[] => {
  const file = join(dir, "kustomization.yaml");
  const kustomization: unknown = parseYaml(readFileSync(file, "utf8"));
  if (!isRecord(kustomization)) throw new Error(`${file}: not a mapping`);
  for (const key of Object.keys(kustomization))
    if (!known.has(key))
      throw new Error(`${file}: ${key} is not supported by src/devcluster/lab/kustomize.ts`);
  const resources = Array.isArray(kustomization.resources) ? kustomization.resources.map(String) : [];
  let objects = resources.flatMap((resource): KubeManifest[] => {
    const path = join(dir, resource);
    if (statSync(path).isDirectory()) return renderKustomization(path);
    return parseAllDocuments(readFileSync(path, "utf8"))
      .map((document): unknown => document.toJS())
      .filter((value) => value !== null && value !== undefined)
      .map((value) => asManifest(value, path));
  });
  objects = applyImages(objects, Array.isArray(kustomization.images) ? kustomization.images : []);
  const patches = Array.isArray(kustomization.patches) ? kustomization.patches : [];
  patches.forEach((patch, n) => {
    objects = applyPatch(objects, patch, `${file} patches[${n}]`);
  });
  return objects;
};
