/**
 * The files of a scaffolded project (`opstask init`): the package's templates/init/*.tmpl with the
 * project's names filled in, and a package.json whose versions are the ones this opstask was built
 * and tested with.
 */
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import type { ProjectNames } from "./project-names.ts";

export interface ProjectFile {
  readonly path: string;
  readonly text: string;
}

/** What package.json's versions come from: opstask's own manifest. */
export interface OpstaskManifest {
  readonly version: string;
  readonly engines?: Readonly<Record<string, string>>;
  readonly peerDependencies?: Readonly<Record<string, string>>;
  readonly devDependencies?: Readonly<Record<string, string>>;
}

/**
 * templates/ sits two directories above this module's folder in both layouts it runs from
 * (src/cli/init in a checkout, dist/cli/init in the npm package).
 */
export const templateDir = fileURLToPath(new URL("../../../templates/init/", import.meta.url));

const walk = async (dir: string): Promise<ReadonlyArray<string>> => {
  const entries = await readdir(dir, { withFileTypes: true });
  const nested = await Promise.all(
    entries.map((entry) =>
      entry.isDirectory() ? walk(join(dir, entry.name)) : Promise.resolve([join(dir, entry.name)]),
    ),
  );
  return nested.flat().sort();
};

/** `gitignore.tmpl` → `.gitignore` (npm drops a package's `.gitignore` files), else the name without `.tmpl`. */
const targetPath = (template: string): string => {
  const path = template.replace(/\.tmpl$/, "");
  return path === "gitignore" ? ".gitignore" : path;
};

const fill = (text: string, names: ProjectNames): string =>
  text
    .replaceAll("__Kind__", names.kind)
    .replaceAll("__kind__", names.kind.charAt(0).toLowerCase() + names.kind.slice(1))
    .replaceAll("__group__", names.group)
    .replaceAll("__version__", names.version)
    .replaceAll("__plural__", names.plural)
    .replaceAll("__name__", names.name);

const need = (versions: Readonly<Record<string, string>> | undefined, name: string): string => {
  const version = versions?.[name];
  if (version === undefined) throw new Error(`opstask's package.json names no version of ${name}`);
  return version;
};

/** The project's package.json: opstask as `dependency` (a `file:` path, opstask-dependency.ts). */
export const projectManifest = (
  names: ProjectNames,
  opstask: OpstaskManifest,
  dependency: string,
): ProjectFile => {
  const peer = (name: string) => need(opstask.peerDependencies, name);
  const dev = (name: string) => need(opstask.devDependencies, name);
  const kindExport = `${names.kind.charAt(0).toLowerCase()}${names.kind.slice(1)}Kind`;
  const manifest = {
    name: names.name,
    version: "0.1.0",
    private: true,
    // Node runs the .ts files as ES modules only with this ("commonjs" is npm init's default).
    type: "module",
    // The Node versions opstask itself runs on.
    engines: { node: need(opstask.engines, "node") },
    scripts: {
      start: "node src/main.ts",
      test: "vitest run",
      typecheck: "tsc -p .",
      crd: "opstask crd --module src/kind.ts --export crd -o crd.yaml",
      deploy: `opstask deploy-artifacts --module src/kind.ts --export ${kindExport} --main src/main.ts -o deploy`,
    },
    dependencies: { opstask: dependency, effect: peer("effect") },
    devDependencies: {
      "@kubernetes/client-node": peer("@kubernetes/client-node"),
      "@types/node": dev("@types/node"),
      "fast-check": dev("fast-check"),
      // The Dockerfile's `opstask bundle` step (after `npm ci`) bundles with it.
      rolldown: peer("rolldown"),
      typescript: dev("typescript"),
      vitest: dev("vitest"),
    },
  };
  return { path: "package.json", text: `${JSON.stringify(manifest, null, 2)}\n` };
};

export const projectFiles = async (
  names: ProjectNames,
  opstask: OpstaskManifest,
  dependency: string,
  templates = templateDir,
): Promise<ReadonlyArray<ProjectFile>> => {
  const files = await Promise.all(
    (await walk(templates)).map(async (file) => ({
      path: targetPath(relative(templates, file)),
      text: fill(await readFile(file, "utf8"), names),
    })),
  );
  return [projectManifest(names, opstask, dependency), ...files];
};
