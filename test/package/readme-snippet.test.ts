/**
 * The README's library snippet (its one ```ts block) compiles against the library as published:
 * it is type-checked as a module of this repository, where "opstask" resolves to src/ through the
 * package's own exports (the `opstask-source` condition), under the project's strict settings.
 */
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { repoRoot } from "../support/cluster.ts";

const run = promisify(execFile);

/** The body of the README's ```ts block; exactly one is expected. */
const readmeSnippets = (readme: string): string[] =>
  [...readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((match) => match[1] ?? "");

// Inside the repository (tmp/ is ignored) so that the package's self-reference resolves.
mkdirSync(join(repoRoot, "tmp"), { recursive: true });
const dir = mkdtempSync(join(repoRoot, "tmp", "readme-snippet-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("README.md's library snippet", () => {
  it("type-checks under the project's strict settings", async () => {
    const snippets = readmeSnippets(readFileSync(join(repoRoot, "README.md"), "utf8"));
    expect(snippets).toHaveLength(1);
    writeFileSync(join(dir, "snippet.ts"), snippets[0] ?? "");
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({ extends: join(repoRoot, "tsconfig.json"), include: ["snippet.ts"] }),
    );
    const tsc = join(repoRoot, "node_modules", ".bin", "tsc");
    const result = await run(tsc, ["-p", dir], { cwd: dir, timeout: 120_000 }).catch(
      (error: { readonly stdout?: string }) => ({ stdout: error.stdout ?? String(error) }),
    );
    expect(result.stdout).toBe("");
  });
});
