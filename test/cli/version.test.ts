/**
 * `opstask --version` and `opstask version` print package.json's version, read at run time (the image
 * check runs the same flag against the bundle inside the image).
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { repoRoot } from "../support/cluster.ts";

const manifestVersion = (
  JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { version: string }
).version;

const run = (...args: string[]): string =>
  execFileSync(process.execPath, [join(repoRoot, "src/cli/main.ts"), ...args], {
    encoding: "utf8",
    timeout: 30_000,
  });

describe("opstask --version", () => {
  it.each([["--version"], ["version"]])("%s prints package.json's version and exits 0", (flag) => {
    expect(manifestVersion).toMatch(/^\d+\.\d+\.\d+/);
    expect(run(flag)).toBe(`${manifestVersion}\n`);
  });
});
