/**
 * The static and dynamic imports reachable from built entry files (ES modules as tsc emits them):
 * which files are loaded and which packages they name. A text scan is enough for tsc's output (one
 * `import … from "x"`, `export … from "x"` or `import("x")` per import, string literals only).
 */
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";

export interface ImportGraph {
  /** Every local module file reached, absolute paths. */
  readonly files: ReadonlySet<string>;
  /** Package specifier → the first file that imports it. */
  readonly packages: ReadonlyMap<string, string>;
  /** Packages some file imports statically (`import … from`), i.e. loaded as soon as that file is. */
  readonly staticPackages: ReadonlySet<string>;
  /** The local files loaded as soon as the entries are: reached through static imports only. */
  readonly staticFiles: ReadonlySet<string>;
}

const importPattern =
  /(?:^|[\s;}])(?:import|export)\s(?:[^'";]*?\sfrom\s*)?["']([^"']+)["']|\bimport\(\s*["']([^"']+)["']\s*\)/g;

export const importGraph = (entries: ReadonlyArray<string>): ImportGraph => {
  const files = new Set<string>();
  const packages = new Map<string, string>();
  const staticPackages = new Set<string>();
  const staticFiles = new Set<string>();
  // Each file with whether a chain of static imports from an entry reaches it; static first.
  const pending: Array<{ readonly file: string; readonly atOnce: boolean }> = entries.map((file) => ({
    file,
    atOnce: true,
  }));
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    const { file, atOnce } = next;
    if (files.has(file) && (!atOnce || staticFiles.has(file))) continue;
    files.add(file);
    if (atOnce) staticFiles.add(file);
    for (const match of readFileSync(file, "utf8").matchAll(importPattern)) {
      const specifier = match[1] ?? match[2];
      if (specifier === undefined) continue;
      const isStatic = match[1] !== undefined;
      if (specifier.startsWith("."))
        pending.push({ file: resolve(dirname(file), specifier), atOnce: atOnce && isStatic });
      else {
        if (!packages.has(specifier)) packages.set(specifier, file);
        if (isStatic) staticPackages.add(specifier);
      }
    }
  }
  return { files, packages, staticPackages, staticFiles };
};

/** `effect/Schema` → `effect`, `@scope/name/x` → `@scope/name`; `node:` builtins stay as they are. */
export const packageName = (specifier: string): string => {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] ?? specifier);
};
