/**
 * Where a running process's resident memory is, from /proc/PID/smaps (Linux): the node binary's own
 * pages, V8's heap, malloc's main arena, thread stacks and other anonymous memory, shared libraries.
 * V8 reserves its heap in 256 KiB-aligned anonymous regions (pages of 256 KiB, large objects in
 * multiples), so an anonymous mapping whose size is a multiple of 256 KiB counts as V8's; the rest of
 * the anonymous memory is malloc's other arenas and thread stacks. A reading, not an exact split.
 *
 *   node bench/memory-by-mapping.ts PID|FILE [PID|FILE …]     (a column per process, MB)
 *
 * A FILE is a saved copy of a smaps (bench/opstask-at-rest.ts --snapshot-dir writes them).
 */
import { readFileSync } from "node:fs";

interface Mapping {
  readonly name: string;
  readonly size: number;
  readonly rss: number;
  readonly anonymous: number;
}

const parse = (pid: string): Mapping[] => {
  const mappings: Mapping[] = [];
  let current: { name: string; size: number; rss: number; anonymous: number } | undefined;
  for (const line of readFileSync(/^\d+$/.test(pid) ? `/proc/${pid}/smaps` : pid, "utf8").split("\n")) {
    const header = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (header !== null) {
      if (current !== undefined) mappings.push(current);
      current = {
        name: header[3] ?? "",
        size: Number.parseInt(header[2] ?? "0", 16) - Number.parseInt(header[1] ?? "0", 16),
        rss: 0,
        anonymous: 0,
      };
      continue;
    }
    const field = /^(Rss|Anonymous):\s+(\d+) kB$/.exec(line);
    if (field !== null && current !== undefined) {
      if (field[1] === "Rss") current.rss = Number(field[2]) * 1024;
      else current.anonymous = Number(field[2]) * 1024;
    }
  }
  if (current !== undefined) mappings.push(current);
  return mappings;
};

const categories = [
  "node binary: file-backed pages",
  "node binary: written pages (relocations, data)",
  "V8 heap (256 KiB-multiple anonymous)",
  "malloc main arena ([heap])",
  "other anonymous (arenas, stacks)",
  "shared libraries",
  "other",
] as const;
type Category = (typeof categories)[number];

const categorize = (mapping: Mapping, binary: string): Category => {
  if (mapping.name === binary || mapping.name.endsWith("/node"))
    return mapping.anonymous > 0
      ? "node binary: written pages (relocations, data)"
      : "node binary: file-backed pages";
  if (mapping.name === "[heap]") return "malloc main arena ([heap])";
  if (mapping.name === "" || mapping.name.startsWith("[anon")) {
    return mapping.size % (256 * 1024) === 0
      ? "V8 heap (256 KiB-multiple anonymous)"
      : "other anonymous (arenas, stacks)";
  }
  if (mapping.name.includes(".so")) return "shared libraries";
  return "other";
};

const pids = process.argv.slice(2);
if (pids.length === 0) throw new Error("usage: node bench/memory-by-mapping.ts PID [PID …]");
const columns = pids.map((pid) => {
  const mappings = parse(pid);
  const binary = mappings.find((m) => m.name.endsWith("/node"))?.name ?? "";
  const sums = new Map<Category, number>(categories.map((c) => [c, 0]));
  for (const mapping of mappings) {
    const category = categorize(mapping, binary);
    sums.set(category, (sums.get(category) ?? 0) + mapping.rss);
  }
  return { pid, sums, total: mappings.reduce((sum, m) => sum + m.rss, 0) };
});
const mb = (bytes: number) => (bytes / 1e6).toFixed(1);
console.log(`| mapping | ${columns.map((c) => `pid ${c.pid}`).join(" | ")} |`);
console.log(`|---|${columns.map(() => "---:").join("|")}|`);
for (const category of categories)
  console.log(`| ${category} | ${columns.map((c) => mb(c.sums.get(category) ?? 0)).join(" | ")} |`);
console.log(`| **RSS** | ${columns.map((c) => mb(c.total)).join(" | ")} |`);
