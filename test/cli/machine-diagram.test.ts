import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { machineMermaid } from "../../src/machine/export.ts";
import { repoRoot } from "../support/cluster.ts";

describe("the lifecycle diagram of docs/architecture.md", () => {
  it("is what `opstask machine --format mermaid` prints for the current machine", () => {
    const doc = readFileSync(`${repoRoot}/docs/architecture.md`, "utf8");
    const block = /```mermaid\n([\s\S]*?)```/.exec(doc)?.[1];
    expect(block).toBe(machineMermaid());
  });
});
