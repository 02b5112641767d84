/**
 * docs/library.md shows the getting-started operator's files whole, each after a
 * `<!-- file: PATH -->` marker; they must be the files the tarball test compiles and runs.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../support/cluster.ts";

const doc = readFileSync(join(repoRoot, "docs", "library.md"), "utf8");
const shown = [...doc.matchAll(/^<!-- file: (\S+) -->\n```ts\n([\s\S]*?)^```$/gm)];

describe("docs/library.md", () => {
  it("shows every getting-started file", () => {
    expect(shown.map((match) => match[1])).toEqual(
      ["greeting.ts", "handlers.ts", "simulation.ts", "main.ts", "cli.ts"].map(
        (name) => `examples/getting-started/${name}`,
      ),
    );
  });

  it.each(shown.map((match) => [match[1] ?? "", match[2] ?? ""]))("shows %s as it is", (path, code) => {
    expect(code).toBe(readFileSync(join(repoRoot, path), "utf8"));
  });
});
