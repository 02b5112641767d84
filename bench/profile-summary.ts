/**
 * Summarises V8 profiles of the controller (written by `scripts/bench druid-side-by-side --cpu-prof DIR`):
 * a `.cpuprofile` by self time per function and per module (a package under node_modules, or one of
 * our source files as named in the bundle), a `.heapsnapshot` by retained-object kind (self size per
 * constructor). Prints tables; asserts nothing.
 *
 *   node bench/profile-summary.ts FILE.cpuprofile|FILE.heapsnapshot [--top N]
 */
import { readFileSync } from "node:fs";

const file = process.argv[2];
if (file === undefined)
  throw new Error("usage: profile-summary.ts FILE.cpuprofile|FILE.heapsnapshot [--top N]");
const topAt = process.argv.indexOf("--top");
const top = topAt === -1 ? 25 : Number(process.argv[topAt + 1]);

const table = (title: string, rows: Array<[string, number]>, total: number, unit: string, scale: number) => {
  console.log(`\n## ${title}\n`);
  console.log(`| what | ${unit} | share |`);
  console.log("|---|---:|---:|");
  for (const [name, value] of rows.sort((a, b) => b[1] - a[1]).slice(0, top))
    console.log(
      `| ${name.replaceAll("|", "\\|")} | ${(value / scale).toFixed(1)} | ${((100 * value) / total).toFixed(1)} % |`,
    );
};

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly children?: readonly number[];
}
interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

const moduleOf = (url: string): string => {
  if (url === "") return "(native / V8)";
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg?.[1] !== undefined) return pkg[1];
  if (url.startsWith("node:")) return url;
  return url.replace(/^file:\/\/.*?\/(src|bench|test|\.build)\//, "$1/");
};

if (file.endsWith(".cpuprofile")) {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfUs = new Map<number, number>();
  for (const [i, id] of profile.samples.entries())
    selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const byFunction = new Map<string, number>();
  const byModule = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const frame = byId.get(id)?.callFrame;
    if (frame === undefined) continue;
    const name = `${frame.functionName || "(anonymous)"} ${moduleOf(frame.url)}:${frame.lineNumber + 1}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
    byModule.set(moduleOf(frame.url), (byModule.get(moduleOf(frame.url)) ?? 0) + us);
  }
  console.log(`# ${file}\n\n${(total / 1e6).toFixed(2)} s sampled`);
  table("Self time by module", [...byModule], total, "ms", 1000);
  table("Self time by function", [...byFunction], total, "ms", 1000);
} else {
  const snapshot = JSON.parse(readFileSync(file, "utf8")) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
    nodes: number[];
    strings: string[];
  };
  const fields = snapshot.snapshot.meta.node_fields;
  const width = fields.length;
  const typeAt = fields.indexOf("type");
  const nameAt = fields.indexOf("name");
  const sizeAt = fields.indexOf("self_size");
  const types = snapshot.snapshot.meta.node_types[0];
  const byKind = new Map<string, number>();
  let total = 0;
  for (let i = 0; i < snapshot.nodes.length; i += width) {
    const type = types[snapshot.nodes[i + typeAt] ?? 0] ?? "?";
    const size = snapshot.nodes[i + sizeAt] ?? 0;
    const name =
      type === "object" || type === "native"
        ? (snapshot.strings[snapshot.nodes[i + nameAt] ?? 0] ?? "?")
        : `(${type})`;
    byKind.set(name, (byKind.get(name) ?? 0) + size);
    total += size;
  }
  console.log(`# ${file}\n\n${(total / 2 ** 20).toFixed(1)} MB of objects in the heap`);
  table("Self size by kind", [...byKind], total, "KB", 1024);
}
