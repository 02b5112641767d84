/**
 * The API reference is built, not committed: `npm run docs:api` (scripts/api-docs.ts) builds it from
 * the library's TSDoc, and this test holds that the build runs and writes a page for every public
 * entry. The first run installs TypeDoc into scripts/api-docs/ (npm's cache first).
 */
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { repoRoot } from "../support/cluster.ts";

const run = promisify(execFile);
const out = mkdtempSync(join(tmpdir(), "opstask-api-docs-"));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe("the API reference (npm run docs:api)", () => {
  it("builds, with a page for each public entry", { timeout: 480_000 }, async () => {
    const result = await run(process.execPath, [join(repoRoot, "scripts", "api-docs.ts"), "--out", out], {
      cwd: repoRoot,
      timeout: 450_000,
      maxBuffer: 16 << 20,
    }).then(
      () => "",
      (error: { readonly stderr?: string }) => error.stderr ?? String(error),
    );
    expect(result).toBe("");
    const index = readFileSync(join(out, "README.md"), "utf8");
    for (const entry of ["index", "advanced", "testing", "crd", "cli"]) {
      expect(existsSync(join(out, entry))).toBe(true);
      expect(index).toContain(`${entry}/`);
    }
  });

  it("is not committed (docs/api/ is ignored)", () => {
    expect(readFileSync(join(repoRoot, ".gitignore"), "utf8")).toMatch(/^docs\/api\/$/m);
  });
});
