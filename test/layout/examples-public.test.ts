/**
 * The examples are written as an operator writes their own project: every import is a file of the same
 * example, the package's public entries (`opstask`, `opstask/testing`, `opstask/crd`, `opstask/cli`),
 * or a package of the operator's own. A path into the repository (`../../src/…`, `../../test/…`)
 * would work here and fail in their project; the tarball test runs backup-verify from the packed
 * package to prove the rest.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../support/cluster.ts";

const examples = join(repoRoot, "examples");
const publicEntries = ["opstask", "opstask/testing", "opstask/crd", "opstask/cli"];

const exampleFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return exampleFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });

/** An import no operator's project could resolve: outside the example's folder, or a private part of opstask. */
const outsideTheProject = (file: string, specifier: string): boolean => {
  if (specifier.startsWith(".")) {
    const target = relative(dirname(file), resolve(dirname(file), specifier));
    return target.startsWith("..");
  }
  return specifier.startsWith("opstask") && !publicEntries.includes(specifier);
};

describe("the examples", () => {
  const files = exampleFiles(examples);
  const imports = files.flatMap((file) =>
    [...readFileSync(file, "utf8").matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*)["']([^"']+)["']/g)].map(
      (match) => ({
        file: relative(repoRoot, file),
        specifier: match[1] ?? "",
      }),
    ),
  );

  it("are read (the check below is not vacuous)", () => {
    expect(imports.filter((edge) => edge.specifier === "opstask/testing").length).toBeGreaterThan(1);
    expect(new Set(files.map((file) => relative(examples, file).split("/")[0]))).toEqual(
      new Set(["backup-verify", "getting-started"]),
    );
  });

  it("import only their own files and the package's public entries", () => {
    expect(imports.filter((edge) => outsideTheProject(join(repoRoot, edge.file), edge.specifier))).toEqual(
      [],
    );
  });
});
