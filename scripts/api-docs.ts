/**
 * The API reference, generated from the TSDoc of the library's entries (`opstask`,
 * `opstask/advanced`, `opstask/testing`, `opstask/crd`, `opstask/cli`) with TypeDoc and its Markdown
 * plugin. It is built, not committed (docs/api/ is ignored), so it can never disagree with the
 * sources. TypeDoc needs TypeScript 6 while the repository builds with 7, so the tools live in
 * scripts/api-docs/ with their own lock; they are installed there on first use (`npm ci`).
 *
 *   node scripts/api-docs.ts              build into docs/api/
 *   node scripts/api-docs.ts --out DIR    build into DIR
 */
import { execFileSync } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const tools = join(root, "scripts", "api-docs");

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
  const at = process.argv.indexOf("--out");
  const target = at === -1 ? join(root, "docs", "api") : resolve(process.argv[at + 1] ?? "");
  if (at !== -1 && process.argv[at + 1] === undefined) {
    console.error("api-docs: --out needs a directory, e.g. --out /tmp/opstask-api");
    process.exitCode = 2;
  } else {
    rmSync(target, { recursive: true, force: true });
    generate(target);
    console.log(`api-docs: wrote ${relative(root, target) || target}/`);
  }
}
