/**
 * `opstask bundle <entry> [out-dir]`: an operator's controller (or opstask's own CLI) bundled into
 * minified ES modules with rolldown, for an image without node_modules: one file for what the entry
 * loads at once, chunks for what it loads on demand; the controller then holds less memory than on
 * its sources (docs/design-notes.md §15). rolldown is an optional peer dependency.
 */
import { existsSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { importOptional } from "../optional-package.ts";
import { OptionError } from "./options.ts";
import { parseArgsMessage } from "./parse-args-message.ts";

export interface BundleOptions {
  /** `false` keeps function names (readable CPU profiles). Default true. */
  readonly minify?: boolean;
  /** Export conditions to resolve with besides the defaults (e.g. `opstask-source`). */
  readonly conditions?: ReadonlyArray<string>;
}

/** Optional peers of opstask that a controller never needs in a pod: left out when not installed. */
const optionalPeers = ["@kubernetes/client-node", "@statelyai/inspect", "ws", "@viz-js/viz"];

/** Whether `name` is installed in a node_modules folder at or above `dir`. */
const installed = (name: string, dir: string): boolean => {
  for (let at = dir; ; at = dirname(at)) {
    if (existsSync(join(at, "node_modules", name, "package.json"))) return true;
    if (dirname(at) === at) return false;
  }
};

/**
 * Bundles `entry` into `outDir` (emptied first); resolves with the path of the entry's output. An
 * optional peer that is not installed stays an import (a feature needing it then names it).
 */
export const bundle = async (entry: string, outDir: string, options: BundleOptions = {}): Promise<string> => {
  const { build } = await importOptional("rolldown", "opstask bundle", () => import("rolldown"));
  const input = resolve(entry);
  const dir = resolve(outDir);
  rmSync(dir, { recursive: true, force: true });
  const result = await build({
    input,
    platform: "node",
    logLevel: "warn",
    // rolldown itself (a native binding) is never bundled: `opstask bundle` runs where it is installed.
    external: ["rolldown", ...optionalPeers.filter((name) => !installed(name, dirname(input)))],
    ...(options.conditions === undefined
      ? {}
      : { resolve: { conditionNames: [...options.conditions, "import", "node", "default"] } }),
    output: { dir, format: "esm", minify: options.minify ?? true, entryFileNames: "[name].js" },
  });
  const main = result.output.find((chunk) => chunk.type === "chunk" && chunk.isEntry);
  if (main === undefined) throw new Error(`bundling ${entry}: no entry chunk`);
  return resolve(dir, main.fileName);
};

const usage = `Usage: opstask bundle <entry> [out-dir] [--no-minify]

Bundles a controller's program (e.g. main.ts) and its dependencies into minified ES modules in
out-dir (default dist/bundle; emptied first), for an image without node_modules: run it with
node out-dir/<entry>.js. Needs rolldown: npm install --save-dev rolldown.

  --no-minify   keep names (readable CPU profiles)
  -h, --help    this text
`;

export const bundleCommand = async (argv: ReadonlyArray<string>): Promise<number> => {
  let parsed: ReturnType<typeof parseBundleArgs>;
  try {
    parsed = parseBundleArgs(argv);
  } catch (error) {
    throw new OptionError(`${parseArgsMessage(error)}; see 'opstask bundle --help'`);
  }
  if (parsed.values.help === true) {
    process.stdout.write(usage);
    return 0;
  }
  const [entry, outDir = "dist/bundle", extra] = parsed.positionals;
  if (entry === undefined) throw new OptionError("give the entry to bundle, e.g. opstask bundle main.ts");
  if (extra !== undefined) throw new OptionError(`unexpected argument ${extra}; see 'opstask bundle --help'`);
  if (!existsSync(entry)) throw new OptionError(`${entry}: no such file`);
  const out = await bundle(entry, outDir, { minify: parsed.values["no-minify"] !== true });
  process.stdout.write(`${out}\n`);
  return 0;
};

const parseBundleArgs = (argv: ReadonlyArray<string>) =>
  parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: { "no-minify": { type: "boolean" }, help: { type: "boolean", short: "h" } },
    strict: true,
  });
