/**
 * Bundles the opstask CLI (or another entry) into minified ES modules for the image: one file for
 * what `opstask controller` loads, chunks loaded on demand for the other commands. Compared with
 * running the TypeScript sources, the controller process holds ~20 MB less: no type stripping, and
 * only the parts of its dependencies it uses, without their doc comments (`scripts/bench cluster`
 * measures the process as bundled here).
 *
 *   node scripts/bundle.ts [ENTRY] [OUT_DIR]     (default: src/cli/main.ts → dist/bundle)
 */
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { bundle as bundleEntry } from "../src/cli/bundle-command.ts";

const root = fileURLToPath(new URL("..", import.meta.url));

/**
 * Bundles `entry` into `outDir` (both relative to the repository; emptied first); resolves with the
 * path of the entry's output. `minify: false` keeps function names (for readable CPU profiles).
 */
export const bundle = (
  entry: string,
  outDir: string,
  minify = true,
  conditions?: ReadonlyArray<string>,
): Promise<string> =>
  bundleEntry(resolve(root, entry), resolve(root, outDir), {
    minify,
    ...(conditions === undefined ? {} : { conditions }),
  });

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const out = await bundle(process.argv[2] ?? "src/cli/main.ts", process.argv[3] ?? "dist/bundle");
  process.stdout.write(`${out}\n`);
}
