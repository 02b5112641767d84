/**
 * The etcd flagship (src/etcd) is the framework's first user, so it imports the framework as any
 * operator does: through the package's public entries (package.json "exports": `opstask`,
 * `opstask/advanced`, `opstask/testing`, …), never a file behind them. When the flagship needs
 * something no entry offers, the entry grows it for everyone (or the code moves into src/etcd when
 * only the flagship needs it).
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../support/cluster.ts";

const src = join(repoRoot, "src");
const flagship = join(src, "etcd");

const sourceFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });

interface PackageJson {
  readonly name: string;
  readonly exports: Readonly<Record<string, string | Readonly<Record<string, string>>>>;
}

const packageJson: PackageJson = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8"));

/** The source file of each public entry ("opstask/advanced" → src/advanced.ts), from package.json. */
const publicEntries: ReadonlyMap<string, string> = new Map(
  Object.entries(packageJson.exports).flatMap(([subpath, target]) => {
    const source = typeof target === "string" ? undefined : target["opstask-source"];
    if (source === undefined) return [];
    const specifier = subpath === "." ? packageJson.name : `${packageJson.name}/${subpath.slice(2)}`;
    return [[specifier, resolve(repoRoot, source)] as const];
  }),
);
const publicFiles = new Set(publicEntries.values());

interface FlagshipImport {
  readonly file: string;
  readonly specifier: string;
}

/** Every `import … from`, `export … from`, side-effect import and `import()` of a file's text. */
const specifiersOf = (text: string): string[] =>
  [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)["']([^"']+)["']/g)].map((match) => match[1] ?? "");

/**
 * Whether `specifier`, imported by `file` (absolute), stays on the public side: a file of the flagship,
 * a public entry (by path or by package name), or another package (`effect`, `node:…`).
 */
const isPublicImport = (file: string, specifier: string): boolean => {
  if (specifier.startsWith(".")) {
    const target = resolve(dirname(file), specifier);
    return target.startsWith(`${flagship}/`) || publicFiles.has(target);
  }
  const ownPackage = specifier === packageJson.name || specifier.startsWith(`${packageJson.name}/`);
  return !ownPackage || publicEntries.has(specifier);
};

const flagshipImports = (): FlagshipImport[] =>
  sourceFiles(flagship).flatMap((file) =>
    specifiersOf(readFileSync(file, "utf8")).map((specifier) => ({ file, specifier })),
  );

const shown = (edge: FlagshipImport) => `${relative(repoRoot, edge.file)} imports ${edge.specifier}`;

describe("the etcd flagship's imports", () => {
  const edges = flagshipImports();

  it("are read, and the public entries come from package.json (the check below is not vacuous)", () => {
    expect([...publicEntries.keys()]).toEqual(expect.arrayContaining(["opstask", "opstask/advanced"]));
    expect(publicFiles).toContain(join(src, "index.ts"));
    expect(publicFiles).toContain(join(src, "advanced.ts"));
    const toEntries = edges.filter((edge) => publicFiles.has(resolve(dirname(edge.file), edge.specifier)));
    expect(toEntries.length).toBeGreaterThan(20);
    expect(edges.length).toBeGreaterThan(200);
  });

  it("reach the framework only through its public entries", () => {
    expect(edges.filter((edge) => !isPublicImport(edge.file, edge.specifier)).map(shown)).toEqual([]);
  });

  describe("the rule", () => {
    const handler = join(flagship, "on-demand-snapshot", "handler.ts");
    it("refuses a framework file behind an entry, by path or by package name", () => {
      expect(isPublicImport(handler, "../../machine/types.ts")).toBe(false);
      expect(isPublicImport(handler, "../../runtime/group-objects.ts")).toBe(false);
      expect(isPublicImport(handler, "opstask/src/machine/types.ts")).toBe(false);
    });
    it("takes the entries, the flagship's own files and other packages", () => {
      expect(isPublicImport(handler, "../../index.ts")).toBe(true);
      expect(isPublicImport(handler, "../../advanced.ts")).toBe(true);
      expect(isPublicImport(handler, "opstask/testing")).toBe(true);
      expect(isPublicImport(handler, "../api/etcd.ts")).toBe(true);
      expect(isPublicImport(handler, "effect/Effect")).toBe(true);
    });
  });
});
