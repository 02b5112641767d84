/**
 * What a module costs a controller that loads it at start: resident memory and heap of a process with
 * the Deployment's environment (NODE_OPTIONS, OPSTASK_V8_FLAGS, MALLOC_ARENA_MAX; bench/node-floor.ts's
 * setting) that loads what `opstask controller` loads, with and without the module, bundled as the
 * image runs it. Each figure is taken after two full garbage collections; runs alternate.
 *
 *   scripts/bench module-cost [--runs N]     (default 5)
 *
 * Prints one row per module: RSS and heap used above the controller's own (median over runs).
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { bundle } from "../scripts/bundle.ts";
import { repoRoot } from "../test/support/cluster.ts";
import { deployedEnv } from "../test/support/deployed-env.ts";
import { intArg } from "./args.ts";
import { fmt } from "./cluster-support.ts";

/** Each candidate: what it loads and a first use (a function runs once: V8 compiles it lazily). */
const candidates: ReadonlyArray<{ readonly name: string; readonly load: string }> = [
  {
    name: "yaml (config file, kubeconfig)",
    load: `const m = await import("yaml"); m.parse("a: [1, {b: c}]");`,
  },
  {
    name: "the Stately inspector relay (--inspect)",
    load: `await import("${repoRoot}/src/inspect/stately-inspector.ts");`,
  },
  { name: "the task board (--ui)", load: `await import("${repoRoot}/src/ui/task-board.ts");` },
  { name: "the CRD generator", load: `await import("${repoRoot}/src/library/crd/task-crd.ts");` },
  { name: "the task CLI", load: `await import("${repoRoot}/src/cli/task/index.ts");` },
  {
    name: "client-node (exec/auth-provider kubeconfigs)",
    load: `await import("@kubernetes/client-node");`,
  },
];

/** What `opstask controller` loads before it reads a kubeconfig: its command module and all it imports. */
const controller = `(await import("${repoRoot}/src/cli/v8-flags.ts")).applyV8Flags(process.env);
globalThis.keep = await import("${repoRoot}/src/cli/controller-command.ts");`;

const measure = `
globalThis.gc(); await new Promise((r) => setTimeout(r, 300)); globalThis.gc();
const status = (await import("node:fs")).readFileSync("/proc/self/status", "utf8");
const kib = (field) => Number(new RegExp("^" + field + ":\\\\s+(\\\\d+) kB$", "m").exec(status)[1]) * 1024;
process.stdout.write(JSON.stringify({ rss: kib("VmRSS"), heap: process.memoryUsage().heapUsed }) + "\\n");
`;

const runs = Math.max(1, intArg("runs", 5));
const dir = join(repoRoot, ".build", "module-cost");
rmSync(dir, { recursive: true, force: true });
mkdirSync(dir, { recursive: true });
const entries: { name: string; file: string }[] = [];
for (const [i, { name, load }] of [{ name: "controller", load: "" }, ...candidates].entries()) {
  const source = join(dir, `entry-${i}.ts`);
  writeFileSync(source, `${controller}\n${load}\n${measure}`);
  entries.push({
    name,
    file: await bundle(`.build/module-cost/entry-${i}.ts`, `.build/module-cost/out-${i}`),
  });
}

const env = deployedEnv();
const sample = (file: string): { rss: number; heap: number } => {
  const run = spawnSync(process.execPath, [file], {
    encoding: "utf8",
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      ...env,
      // gc() for the reading; OPSTASK_V8_FLAGS is applied by the entry, as the controller does.
      NODE_OPTIONS: `${env.NODE_OPTIONS ?? ""} --expose-gc`,
    },
    timeout: 60_000,
  });
  const line = run.stdout.trim().split("\n").at(-1) ?? "";
  try {
    return JSON.parse(line) as { rss: number; heap: number };
  } catch {
    throw new Error(`${file}: ${run.stderr.slice(0, 800)}`);
  }
};
const figures = new Map<string, { rss: number[]; heap: number[] }>();
for (let round = 0; round < runs; round += 1)
  for (const { name, file } of round % 2 === 0 ? entries : [...entries].reverse()) {
    const { rss, heap } = sample(file);
    const seen = figures.get(name) ?? { rss: [], heap: [] };
    seen.rss.push(rss);
    seen.heap.push(heap);
    figures.set(name, seen);
  }
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;
const mb = (bytes: number) => fmt(bytes / 2 ** 20, 1);
const base = figures.get("controller") ?? { rss: [0], heap: [0] };
console.log(`| loaded on top of the controller's modules | RSS, MB | heap used, MB |`);
console.log(`|---|---:|---:|`);
console.log(`| (the controller's modules alone) | ${mb(median(base.rss))} | ${mb(median(base.heap))} |`);
for (const { name } of candidates) {
  const seen = figures.get(name) ?? { rss: [], heap: [] };
  console.log(
    `| ${name} | +${mb(median(seen.rss) - median(base.rss))} | +${mb(median(seen.heap) - median(base.heap))} |`,
  );
}
console.log(`\n${runs} runs each, alternated; median. NODE_OPTIONS as deployed plus --expose-gc.`);
rmSync(dir, { recursive: true, force: true });
