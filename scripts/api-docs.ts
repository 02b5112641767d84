/**
 * The API reference in docs/api/, generated from the TSDoc of the library's entries (`opstask`,
 * `opstask/advanced`, `opstask/testing`, `opstask/crd`, `opstask/cli`) with TypeDoc and its Markdown plugin. TypeDoc needs TypeScript 6
 * while the repository builds with 7, so the tools live in scripts/api-docs/ with their own lock;
 * they are installed there on first use (`npm ci`).
 *
 *   node scripts/api-docs.ts            regenerate docs/api/
 *   node scripts/api-docs.ts --check    exit 1 when docs/api/ is not what the sources generate
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const tools = join(root, "scripts", "api-docs");
const target = join(root, "docs", "api");

const filesUnder = (dir: string): Map<string, string> => {
  const files = new Map<string, string>();
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      if (statSync(path).isDirectory()) walk(path);
      else files.set(relative(dir, path), readFileSync(path, "utf8"));
    }
  };
  if (existsSync(dir)) walk(dir);
  return files;
};

/** Files that differ between two trees (added, removed or changed), relative paths. */
export const differences = (expected: Map<string, string>, actual: Map<string, string>): string[] =>
  [...new Set([...expected.keys(), ...actual.keys()])]
    .filter((path) => expected.get(path) !== actual.get(path))
    .sort();

const generate = (out: string): void => {
  if (!existsSync(join(tools, "node_modules", "typedoc"))) {
    execFileSync("npm", ["ci", "--prefer-offline", "--no-audit", "--no-fund"], {
      cwd: tools,
      stdio: "inherit",
      timeout: 300_000,
    });
  }
  execFileSync(
    process.execPath,
    [
      join(tools, "node_modules", "typedoc", "bin", "typedoc"),
      "--options",
      join(tools, "typedoc.json"),
      "--out",
      out,
      "--logLevel",
      "Warn",
    ],
    { cwd: tools, stdio: "inherit", timeout: 300_000 },
  );
};

if (import.meta.main) {
  if (process.argv.includes("--check")) {
    const scratch = mkdtempSync(join(tmpdir(), "opstask-api-docs-"));
    try {
      generate(scratch);
      const stale = differences(filesUnder(scratch), filesUnder(target));
      if (stale.length > 0) {
        console.error(`api-docs: docs/api/ is stale (${stale.join(", ")}); run npm run docs:api`);
        process.exitCode = 1;
      }
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  } else {
    rmSync(target, { recursive: true, force: true });
    generate(target);
    console.log(`api-docs: wrote ${relative(root, target)}/`);
  }
}
