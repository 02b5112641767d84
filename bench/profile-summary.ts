/**
 * Summarises V8 profiles of the controller (written by `scripts/bench druid-side-by-side --cpu-prof DIR`):
 * a `.cpuprofile` by self time per function and per module (a package under node_modules, or one of
 * our source files as named in the bundle), a `.heapsnapshot` by retained-object kind (self size per
 * constructor), a `.heapprofile` (bench/alloc-sampling.ts) by bytes allocated per function and per
 * module, and under each of our functions. Prints tables; asserts nothing.
 *
 *   node bench/profile-summary.ts FILE.cpuprofile|FILE.heapsnapshot|FILE.heapprofile [--top N]
 */
import { readFileSync } from "node:fs";

const file = process.argv[2];
if (file === undefined)
  throw new Error("usage: profile-summary.ts FILE.cpuprofile|FILE.heapsnapshot|FILE.heapprofile [--top N]");
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

/**
 * Where a bundle line came from: an unminified bundle (scripts/bundle.ts with minify off) starts each
 * module with a `// <path>` comment; the last one at or before the line names its source file.
 */
const regions = new Map<string, Array<[number, string]>>();
const sourceOf = (url: string, line: number): string | undefined => {
  if (!url.startsWith("file://")) return undefined;
  let marks = regions.get(url);
  if (marks === undefined) {
    marks = [];
    try {
      for (const [index, text] of readFileSync(new URL(url), "utf8").split("\n").entries()) {
        const match = /^\/\/ ((?:node_modules|src|bench|test|scripts)\/\S+)$/.exec(text);
        if (match?.[1] !== undefined) marks.push([index, match[1]]);
      }
    } catch {
      // not readable any more: keep the bundle's own name
    }
    regions.set(url, marks);
  }
  let found: string | undefined;
  for (const [start, path] of marks) {
    if (start > line) break;
    found = path;
  }
  return found;
};

/** A package under node_modules, one of our source files, or a Node built-in. */
const moduleOf = (url: string, line: number): string => {
  if (url === "") return "(native / V8)";
  if (url.startsWith("node:")) return url;
  const source = sourceOf(url, line) ?? url.replace(/^file:\/\/.*?\/(src|bench|test|\.build)\//, "$1/");
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(source);
  return pkg?.[1] ?? source;
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
    const where = sourceOf(frame.url, frame.lineNumber) ?? moduleOf(frame.url, frame.lineNumber);
    const name = `${frame.functionName || "(anonymous)"} ${where}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
    const module = moduleOf(frame.url, frame.lineNumber);
    byModule.set(module, (byModule.get(module) ?? 0) + us);
  }
  // Inclusive: the time under each of our source files (and each package) anywhere on the stack.
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const stackMemo = new Map<number, readonly string[]>();
  const stackOf = (id: number): readonly string[] => {
    const known = stackMemo.get(id);
    if (known !== undefined) return known;
    const frame = byId.get(id)?.callFrame;
    const up = parent.get(id);
    const above = up === undefined ? [] : stackOf(up);
    const here =
      frame === undefined
        ? undefined
        : frame.functionName === "(garbage collector)" || frame.functionName === "(idle)"
          ? frame.functionName
          : moduleOf(frame.url, frame.lineNumber);
    const result = here === undefined || above.includes(here) ? above : [...above, here];
    stackMemo.set(id, result);
    return result;
  };
  const inclusive = new Map<string, number>();
  for (const [id, us] of selfUs)
    for (const module of stackOf(id)) inclusive.set(module, (inclusive.get(module) ?? 0) + us);
  const busy = total - (inclusive.get("(idle)") ?? 0);
  console.log(`# ${file}\n\n${(total / 1e6).toFixed(2)} s sampled, ${(busy / 1e6).toFixed(2)} s busy`);
  table("Self time by module", [...byModule], total, "ms", 1000);
  table(
    "Busy time under each module (inclusive; shares of busy time; a sample counts for every module on its stack)",
    [...inclusive].filter(([module]) => module !== "(idle)" && module !== "(native / V8)"),
    busy,
    "ms",
    1000,
  );
  table("Self time by function", [...byFunction], total, "ms", 1000);
} else if (file.endsWith(".heapprofile")) {
  interface AllocationNode {
    readonly callFrame: ProfileNode["callFrame"];
    readonly selfSize: number;
    readonly children: readonly AllocationNode[];
  }
  const profile = JSON.parse(readFileSync(file, "utf8")) as { readonly head: AllocationNode };
  const byFunction = new Map<string, number>();
  const byModule = new Map<string, number>();
  // Inclusive per function of our own (named by source file): what was allocated under it.
  const under = new Map<string, number>();
  let total = 0;
  const visit = (node: AllocationNode, above: ReadonlySet<string>): number => {
    const frame = node.callFrame;
    const source = sourceOf(frame.url, frame.lineNumber);
    const module = moduleOf(frame.url, frame.lineNumber);
    const name = `${frame.functionName || "(anonymous)"} ${source ?? module}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + node.selfSize);
    byModule.set(module, (byModule.get(module) ?? 0) + node.selfSize);
    total += node.selfSize;
    const ours = source?.startsWith("src/") === true && !above.has(name);
    const next = ours ? new Set([...above, name]) : above;
    let bytes = node.selfSize;
    for (const child of node.children) bytes += visit(child, next);
    if (ours) under.set(name, (under.get(name) ?? 0) + bytes);
    return bytes;
  };
  visit(profile.head, new Set());
  console.log(`# ${file}\n\n${(total / 2 ** 20).toFixed(1)} MB allocated (sampled; freed objects included)`);
  table("Allocated by module (self)", [...byModule], total, "MB", 2 ** 20);
  table("Allocated by function (self)", [...byFunction], total, "MB", 2 ** 20);
  table("Allocated under each of our functions (inclusive)", [...under], total, "MB", 2 ** 20);
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
