/**
 * How a scaffolded project depends on opstask. Not by a version range: the npm registry's name
 * `opstask` is not this project's, so `"opstask": "^0.1.0"` would install, and run in every
 * scaffolded operator, whatever whoever registers that name first publishes. Only paths, which
 * name the code itself:
 *
 * - a tarball (`npm pack` writes `opstask-<version>.tgz`) is copied into the project's `vendor/`
 *   and named relatively (`file:vendor/opstask-<version>.tgz`), so that the project keeps working
 *   when moved, committed or built into an image (the generated Dockerfile copies the project whole);
 * - a directory holding opstask's package.json (a checkout) is linked (`file:<absolute path>`);
 * - by default, the tarball `npm pack` left beside this opstask's package.json, else its directory.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** This opstask's own directory (two above src/cli/init and dist/cli/init alike). */
export const opstaskRoot = fileURLToPath(new URL("../../../", import.meta.url));

/** What the project's package.json names, and the tarball to copy into it first (if any). */
export interface OpstaskDependency {
  readonly spec: string;
  readonly copy?: { readonly from: string; readonly to: string };
}

const isTarball = (path: string) => /\.(tgz|tar\.gz)$/.test(path);

const isOpstaskDirectory = (path: string): boolean => {
  const manifest = join(path, "package.json");
  if (!existsSync(manifest)) return false;
  try {
    return (JSON.parse(readFileSync(manifest, "utf8")) as { name?: unknown }).name === "opstask";
  } catch {
    return false;
  }
};

const fromTarball = (path: string): OpstaskDependency => {
  const to = `vendor/${basename(path)}`;
  return { spec: `file:${to}`, copy: { from: resolve(path), to } };
};

/**
 * The dependency for `--opstask <given>` (undefined: the default for this opstask of `version`), or
 * why `given` cannot be one.
 */
export const opstaskDependency = (
  given: string | undefined,
  version: string,
  root = opstaskRoot,
): OpstaskDependency | { readonly error: string } => {
  if (given === undefined) {
    const packed = join(root, `opstask-${version}.tgz`);
    return existsSync(packed) ? fromTarball(packed) : { spec: `file:${resolve(root)}` };
  }
  const path = given.startsWith("file:") ? given.slice("file:".length) : given;
  if (isTarball(path) && existsSync(path) && statSync(path).isFile()) return fromTarball(path);
  if (existsSync(path) && statSync(path).isDirectory() && isOpstaskDirectory(path))
    return { spec: `file:${resolve(path)}` };
  const why = isTarball(path)
    ? "no such file"
    : existsSync(path)
      ? "not opstask's tarball (.tgz) nor a directory holding opstask's package.json"
      : "a version range or registry name: the npm registry's `opstask` is not this project's, and whoever registers it would run code in your operator";
  return {
    error: `--opstask ${JSON.stringify(given)}: ${why}; give the path of opstask's tarball (\`npm pack\` in an opstask checkout writes opstask-${version}.tgz) or of an opstask checkout`,
  };
};
