/**
 * Bundles the opstask CLI (or another entry) into minified ES modules for the image: one file for
 * what `opstask controller` loads, chunks loaded on demand for the other commands. Compared with
 * running the TypeScript sources, the controller process holds ~20 MB less: no type stripping, and
 * only the parts of its dependencies it uses, without their doc comments (`scripts/bench cluster`
 * measures the process as bundled here).
 *
 *   node scripts/bundle.ts [ENTRY] [OUT_DIR]     (default: src/cli/main.ts → dist/bundle)
 */
import { rmSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "rolldown";

const root = fileURLToPath(new URL("..", import.meta.url));

/**
 * Bundles `entry` into `outDir` (emptied first); resolves with the path of the entry's output.
 * `minify: false` keeps function names (for readable CPU profiles).
 */
export const bundle = async (entry: string, outDir: string, minify = true): Promise<string> => {
  const dir = resolve(root, outDir);
  rmSync(dir, { recursive: true, force: true });
  const result = await build({
    input: resolve(root, entry),
    platform: "node",
    logLevel: "warn",
    output: { dir, format: "esm", minify, entryFileNames: "[name].js" },
  });
  const main = result.output.find((chunk) => chunk.type === "chunk" && chunk.isEntry);
  if (main === undefined) throw new Error(`bundling ${entry}: no entry chunk`);
  return resolve(dir, main.fileName);
};

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const out = await bundle(process.argv[2] ?? "src/cli/main.ts", process.argv[3] ?? "dist/bundle");
  process.stdout.write(`${out}\n`);
}
