import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { machineMermaid } from "../../src/machine/export.ts";
import { repoRoot } from "../support/cluster.ts";

describe("the README's lifecycle diagram", () => {
  it("is what `opstask machine --format mermaid` prints for the current machine", () => {
    const readme = readFileSync(`${repoRoot}/README.md`, "utf8");
    const block = /```mermaid\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block).toBe(machineMermaid());
  });
});
