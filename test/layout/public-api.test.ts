/**
 * The size of the public API. The root entry (`opstask`) holds what an operator writes with, at most
 * 40 names (kube-rs re-exports about 12 at its root, Pepr about 15); the parts underneath are
 * `opstask/advanced`; neither names the etcd flagship, which is a user of the library, not part of
 * it. Read from the entry files, which consist of re-export lists only (checked first, so that the
 * count is the API).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../support/cluster.ts";

const rootLimit = 40;

const withoutComments = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, "");

/** The statements of an entry file that are not `export { … } from "…"` or `export type { … } from "…"`. */
const otherStatements = (text: string): string[] =>
  withoutComments(text)
    .replace(/export\s+(?:type\s+)?\{[^}]*\}\s*from\s*"[^"]+";/g, "")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "");

const exportedNames = (text: string): string[] =>
  [...withoutComments(text).matchAll(/export\s+(?:type\s+)?\{([^}]*)\}\s*from/g)].flatMap((match) =>
    (match[1] ?? "")
      .split(",")
      .map((name) => name.trim().replace(/^type\s+/, ""))
      .map((name) => name.split(/\s+as\s+/).at(-1) ?? name)
      .filter((name) => name !== ""),
  );

const entry = (file: string) => readFileSync(join(repoRoot, "src", file), "utf8");

describe("the public API", () => {
  const root = entry("index.ts");
  const advanced = entry("advanced.ts");
  const rootNames = exportedNames(root);
  const advancedNames = exportedNames(advanced);

  it("is declared as re-export lists only, so that the names below are all of it", () => {
    expect(otherStatements(root)).toEqual([]);
    expect(otherStatements(advanced)).toEqual([]);
    expect(rootNames).toContain("runTaskController");
    expect(advancedNames).toContain("runController");
  });

  it(`has at most ${rootLimit} names in its root entry`, () => {
    expect({ count: rootNames.length, names: rootNames }).toMatchObject({
      count: expect.toSatisfy((count: number) => count <= rootLimit),
    });
  });

  it("names no part of the etcd flagship in the root entry, nor etcd in opstask/advanced", () => {
    expect(rootNames.filter((name) => /etcd|druid/i.test(name))).toEqual([]);
    expect(advancedNames.filter((name) => /etcd/i.test(name))).toEqual([]);
  });

  it("gives each name one entry: opstask/advanced repeats nothing of the root", () => {
    expect(advancedNames.filter((name) => rootNames.includes(name))).toEqual([]);
    expect(new Set(rootNames).size).toBe(rootNames.length);
  });
});
