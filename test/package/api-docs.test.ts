/**
 * docs/api/ (the API reference) is what TypeDoc generates from the library's TSDoc now: a changed
 * signature or doc comment without `npm run docs:api` fails here. The first run installs TypeDoc
 * into scripts/api-docs/ (npm's cache first).
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../support/cluster.ts";

const run = promisify(execFile);

describe("docs/api", () => {
  it("is current (regenerate with npm run docs:api)", { timeout: 480_000 }, async () => {
    const result = await run(process.execPath, [join(repoRoot, "scripts", "api-docs.ts"), "--check"], {
      cwd: repoRoot,
      timeout: 450_000,
      maxBuffer: 16 << 20,
    }).then(
      () => "",
      (error: { readonly stderr?: string }) => error.stderr ?? String(error),
    );
    expect(result).toBe("");
  });
});
