/**
 * The layout as an import graph: the framework below, the etcd flagship (src/etcd) on top, the CLI over
 * both. Read from the source's own import statements, so a stray import fails here, not in review.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../support/cluster.ts";

const src = join(repoRoot, "src");

const sourceFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });

/** Every relative import of every file under src/, as paths relative to src/. */
const imports = (): Array<{ readonly from: string; readonly to: string }> =>
  sourceFiles(src).flatMap((file) => {
    const text = readFileSync(file, "utf8");
    const specifiers = [...text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*)["'](\.{1,2}\/[^"']+)["']/g)].map(
      (match) => match[1] ?? "",
    );
    return specifiers.map((specifier) => ({
      from: relative(src, file),
      to: relative(src, resolve(dirname(file), specifier)),
    }));
  });

const under = (path: string, folder: string) => path === folder || path.startsWith(`${folder}/`);

/**
 * The floors, lowest first: a file imports only from its own floor or one below. The shared helpers at
 * src/'s top (timer-limit.ts, node-http.ts, …) are the ground; the package entries other than the CLI's
 * (index.ts, advanced.ts, testing.ts, crd.ts) sit under the flagship, which is built on them; the CLI
 * and its entry (cli.ts) are the roof.
 */
const floors = [
  "ground",
  "api",
  "kube",
  "effects",
  "machine",
  "handlers",
  "reconcile",
  "interpreters",
  "runtime",
  "history",
  "ui",
  "inspect",
  "devcluster",
  "library",
  "schedule",
  "entries",
  "etcd",
  "cli",
] as const;

const packageEntries = new Set(["index.ts", "advanced.ts", "testing.ts", "crd.ts"]);

const rank = (floor: string): number => (floors as ReadonlyArray<string>).indexOf(floor);

const floorOf = (path: string): string => {
  if (!path.includes("/")) return path === "cli.ts" ? "cli" : packageEntries.has(path) ? "entries" : "ground";
  return path.split("/")[0] ?? "";
};

describe("the layout", () => {
  const graph = imports();

  it("reads the graph (the check below is not vacuous)", () => {
    expect(graph.some((edge) => under(edge.to, "etcd") && edge.from.startsWith("cli/"))).toBe(true);
    expect(graph.length).toBeGreaterThan(300);
  });

  it("lets nothing outside src/etcd import the flagship, except the CLI and the package entry point", () => {
    const offending = graph.filter(
      (edge) =>
        under(edge.to, "etcd") &&
        !under(edge.from, "etcd") &&
        !under(edge.from, "cli") &&
        edge.from !== "index.ts",
    );
    expect(offending).toEqual([]);
  });

  it("keeps the effect types free of the machine (the machine imports them, not the other way round)", () => {
    expect(graph.filter((edge) => under(edge.from, "effects") && under(edge.to, "machine"))).toEqual([]);
  });

  it("keeps the framework free of the CLI (only the opstask/cli entry, src/cli.ts, reaches into it)", () => {
    expect(
      graph.filter((edge) => !under(edge.from, "cli") && edge.from !== "cli.ts" && under(edge.to, "cli")),
    ).toEqual([]);
  });

  it("imports only downward, in the floor order of docs/design-notes.md §21 (so no folder cycle)", () => {
    const misplaced = graph
      .map((edge) => ({ ...edge, fromFloor: floorOf(edge.from), toFloor: floorOf(edge.to) }))
      .filter((edge) => edge.fromFloor !== edge.toFloor && rank(edge.toFloor) > rank(edge.fromFloor))
      .map((edge) => `${edge.from} (${edge.fromFloor}) -> ${edge.to} (${edge.toFloor})`);
    expect(misplaced).toEqual([]);
  });

  it("places every file on a floor (a new folder must be given one)", () => {
    expect(
      sourceFiles(src)
        .map((file) => relative(src, file))
        .filter((file) => rank(floorOf(file)) === -1),
    ).toEqual([]);
  });
});
