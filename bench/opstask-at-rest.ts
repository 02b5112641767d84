/**
 * The always-on rows of the druid side-by-side (bench/druid-side-by-side.ts) for opstask alone, for
 * several controller variants on one control plane, so that a change is measured against the one
 * before it in a few minutes instead of a full run: per variant, started on `--etcds` ready Etcds
 * (RSS once quiet), a burst of `--tasks` tasks (tasks/s, p99, CPU and writes per task, peak RSS),
 * `--idle-seconds` idle (requests, CPU, RSS at the end), then a restart on `--cache-tasks` settled
 * tasks (CPU from process start until quiet, CPU of each second after ready, peak RSS, writes). The
 * settled tasks are made once (copies of a task the first variant ran) and shared by every variant.
 * Variants alternate over `--rounds`. Prints one table, a column per variant; asserts nothing.
 *
 *   scripts/bench opstask-at-rest --variant NAME=CLI[@NODE_OPTIONS] [--variant …] [--tasks N]
 *     [--etcds E] [--cache-tasks M] [--idle-seconds S] [--rounds R] [--snapshot-dir DIR [--heap-snapshots]]
 *     [--lines-dir DIR]
 *
 * CLI is a bundled opstask (`node scripts/bundle.ts src/cli/main.ts OUT`, e.g. of another commit);
 * `@NODE_OPTIONS` replaces the Deployment's NODE_OPTIONS. The rest of the environment is the
 * Deployment's (test/support/deployed-env.ts); OPSTASK_V8_FLAGS can be set per variant by prefixing
 * NODE_OPTIONS with `v8=FLAGS;` (spaces as commas), e.g. `base=/tmp/b/main.js@v8=--optimize-for-size,--x;--jitless`,
 * and node's command-line flags after the ENTRYPOINT's with `node=FLAGS;` (V8 flags that count only
 * when the heap is set up, e.g. `node=--heap-growing-percent=20;--jitless`).
 * Defaults: N 1,000, E 1,000, M 5,000, S 60, R 1.
 */
import {
  appendFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { startControlPlane } from "../src/devcluster/control-plane.ts";
import { Mode, startStandIn } from "../test/etcd/support/stand-in.ts";
import { auditLog, isWrite } from "../test/support/audit-log.ts";
import { createTestNamespace, repoRoot } from "../test/support/cluster.ts";
import { deployedEnv } from "../test/support/deployed-env.ts";
import { installOpstask, opstaskUser, startOpstask } from "../test/support/opstask-process.ts";
import { procSample } from "../test/support/proc-stats.ts";
import { argValue, intArg } from "./args.ts";
import {
  createTasks,
  fmt,
  percentile,
  reuseConnections,
  type SettledTemplate,
  settledTemplate,
  sleep,
  TaskWatch,
  table,
  waitUntil,
} from "./cluster-support.ts";
import { clearNamespace, createEtcds, traceCpu, waitQuiet } from "./druid-support.ts";

interface Variant {
  readonly name: string;
  readonly cli: string;
  readonly nodeOptions?: string;
  readonly v8Flags?: string;
  /** Node command-line flags after the ENTRYPOINT's (V8 flags that only count at start go here). */
  readonly nodeArgs?: readonly string[];
}

const parseVariant = (text: string): Variant => {
  const [name, rest] = text.split(/=(.*)/s);
  if (name === undefined || rest === undefined || rest === "")
    throw new Error(`--variant ${text}: give NAME=CLI[@NODE_OPTIONS]`);
  const [cli, options] = rest.split(/@(.*)/s);
  if (cli === undefined) throw new Error(`--variant ${text}: no CLI`);
  if (options === undefined) return { name, cli };
  let variant: Variant = { name, cli };
  let rest2 = options;
  for (
    let prefix = /^(v8|node)=([^;]*);/s.exec(rest2);
    prefix !== null;
    prefix = /^(v8|node)=([^;]*);/s.exec(rest2)
  ) {
    const flags = (prefix[2] ?? "").split(",").filter((flag) => flag !== "");
    variant = prefix[1] === "v8" ? { ...variant, v8Flags: flags.join(" ") } : { ...variant, nodeArgs: flags };
    rest2 = rest2.slice(prefix[0].length);
  }
  return { ...variant, nodeOptions: rest2 };
};

const variants: Variant[] = process.argv
  .flatMap((arg, i) => (arg === "--variant" ? [process.argv[i + 1] ?? ""] : []))
  .map(parseVariant);
if (variants.length === 0) variants.push({ name: "checkout", cli: "" });
const params = {
  tasks: intArg("tasks", 1_000),
  etcds: intArg("etcds", 1_000),
  cacheTasks: intArg("cache-tasks", 5_000),
  idleSeconds: intArg("idle-seconds", 60),
  /** Each variant's controller output, a line each with the time it was read (e.g. with v8=--trace-gc). */
  linesDir: argValue("lines-dir"),
  rounds: Math.max(1, intArg("rounds", 1)),
  inFlight: 20,
  snapshotDir: argValue("snapshot-dir"),
  heapSnapshots: process.argv.includes("--heap-snapshots"),
};

const progress = (line: string): void => {
  process.stderr.write(
    `[at-rest ${new Date().toISOString().slice(11, 19)} load ${fmt(loadavg()[0] ?? 0, 2)}] ${line}\n`,
  );
};
const pad = (n: number) => String(n).padStart(5, "0");
const MB = (bytes: number | undefined) => (bytes === undefined ? Number.NaN : bytes / 2 ** 20);

type Row = Record<string, number>;
const results = new Map<string, Row[]>();

for (const dir of [params.linesDir, params.snapshotDir])
  if (dir !== undefined) mkdirSync(dir, { recursive: true });
const scratch = mkdtempSync(join(tmpdir(), "opstask-at-rest-"));
const audit = auditLog(scratch, [opstaskUser]);
progress("starting the control plane");
const plane = await startControlPlane({
  crds: [
    join(repoRoot, "deploy", "crds", "druid.gardener.cloud_etcdopstasks.yaml"),
    join(repoRoot, "deploy", "crds", "druid.gardener.cloud_etcds.yaml"),
  ],
  apiserverArgs: audit.apiserverArgs,
});
const kc = plane.makeKubeConfig();
reuseConnections(kc);
await installOpstask(plane);
const standIn = await startStandIn({ mode: Mode.ok("{}") });
let template: SettledTemplate | undefined;
let cacheNamespace: string | undefined;
const loadStart = loadavg()[0] ?? 0;

const start = (variant: Variant, namespace: string, etcds: readonly string[]) =>
  startOpstask(plane, {
    namespaces: [namespace],
    resolve: etcds.map((etcd) => `${etcd}-client.${namespace}:*:127.0.0.1`),
    ...(variant.cli === "" ? {} : { cli: variant.cli }),
    ...(variant.nodeOptions === undefined ? {} : { nodeOptions: variant.nodeOptions }),
    ...(variant.v8Flags === undefined ? {} : { env: { OPSTASK_V8_FLAGS: variant.v8Flags } }),
    ...(variant.nodeArgs === undefined ? {} : { nodeArgs: variant.nodeArgs }),
    ...(params.linesDir === undefined
      ? {}
      : {
          onLine: (line: string) =>
            appendFileSync(
              join(params.linesDir ?? "", `${variant.name}.log`),
              `${new Date().toISOString()} ${line}\n`,
            ),
        }),
  });

/**
 * With `--snapshot-dir`: the process's /proc/PID/smaps at this point (bench/memory-by-mapping.ts reads
 * the same file); with `--heap-snapshots` also a V8 heap snapshot, for a variant whose NODE_OPTIONS has
 * `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=DIR` (taken after the figures of that point).
 */
const snapshot = async (variant: Variant, pid: number, label: string): Promise<void> => {
  if (params.snapshotDir === undefined) return;
  mkdirSync(params.snapshotDir, { recursive: true });
  writeFileSync(join(params.snapshotDir, `${label}.smaps`), readFileSync(`/proc/${pid}/smaps`, "utf8"));
  if (!params.heapSnapshots || !(variant.nodeOptions ?? "").includes("--heapsnapshot-signal=SIGUSR2")) return;
  const before = readdirSync(params.snapshotDir).length;
  process.kill(pid, "SIGUSR2");
  await waitUntil(() => readdirSync(params.snapshotDir ?? ".").length > before, 120_000, 500);
  await sleep(3_000);
  const made = readdirSync(params.snapshotDir).find(
    (f) => f.endsWith(".heapsnapshot") && f.startsWith("Heap."),
  );
  if (made !== undefined)
    renameSync(join(params.snapshotDir, made), join(params.snapshotDir, `${label}.heapsnapshot`));
};

/**
 * With `--snapshot-dir`: /proc/PID/smaps whenever the RSS, read every 100 ms, is the highest yet, so
 * the file left is the burst's peak by mapping (to within the sampling).
 */
const watchPeakSmaps = (pid: number, label: string): { stop: () => void } => {
  const dir = params.snapshotDir;
  if (dir === undefined) return { stop: () => {} };
  let highest = 0;
  const timer = setInterval(() => {
    const rss = procSample(pid)?.rss ?? 0;
    if (rss <= highest) return;
    highest = rss;
    try {
      writeFileSync(join(dir, `${label}.smaps`), readFileSync(`/proc/${pid}/smaps`, "utf8"));
    } catch {
      // The process may have ended; the last file written stays.
    }
  }, 100);
  return { stop: () => clearInterval(timer) };
};

const runVariant = async (variant: Variant): Promise<Row> => {
  const row: Row = {};
  const namespace = await createTestNamespace(kc, "at-rest");
  const burst = Array.from({ length: params.tasks }, (_, i) => `burst-${pad(i)}`);
  const etcds = Array.from(
    { length: Math.max(params.etcds, burst.length) },
    (_, i) => `etcd-burst-${pad(i)}`,
  );
  await createEtcds(kc, namespace, etcds, standIn.port, params.inFlight);
  const watch = new TaskWatch(kc, namespace);
  await watch.start();
  const controller = await start(variant, namespace, etcds);
  const pid = controller.pid;
  try {
    await waitQuiet(audit, opstaskUser, pid);
    row["RSS started, Etcds only, MB"] = MB(procSample(pid)?.rss);
    row["CPU to start, Etcds only, s"] = (procSample(pid)?.cpuMs ?? Number.NaN) / 1000;
    await snapshot(variant, pid, `${variant.name}-started`);
    progress(`${variant.name}: ${burst.length} tasks at once`);
    const mark = audit.mark();
    const cpu0 = procSample(pid)?.cpuMs ?? Number.NaN;
    const t0 = performance.now();
    const peakWatch = watchPeakSmaps(pid, `${variant.name}-burst-peak`);
    await createTasks(
      kc,
      namespace,
      burst.map((name, i) => ({ name, etcdName: etcds[i] ?? "", ttl: 3600 })),
      params.inFlight,
      watch,
    );
    const succeeded = (name: string) => watch.tasks.get(name)?.succeededAt !== undefined;
    await waitUntil(() => burst.every(succeeded), Math.max(180_000, params.tasks * 200), 100);
    const { latencies, last } = watch.succeededSince(burst, t0);
    await waitQuiet(audit, opstaskUser, pid);
    const cpu1 = procSample(pid)?.cpuMs ?? Number.NaN;
    const requests = audit.since(mark).filter((r) => r.user === opstaskUser);
    row["tasks/s"] = (latencies.length * 1000) / (last - t0);
    row["p99 create → Succeeded, s"] = percentile(latencies, 99) / 1000;
    row["CPU per task, ms"] = (cpu1 - cpu0) / burst.length;
    row["task writes per task to Succeeded"] =
      requests.filter((r) => isWrite(r) && r.resource.startsWith("etcdopstasks")).length / burst.length;
    row["peak RSS in the burst, MB"] = MB(procSample(pid)?.peakRss);
    peakWatch.stop();
    const first = burst[0];
    if (template === undefined && first !== undefined) template = await settledTemplate(kc, namespace, first);

    progress(`${variant.name}: idle ${params.idleSeconds} s`);
    const markIdle = audit.mark();
    const idleCpu0 = procSample(pid)?.cpuMs ?? Number.NaN;
    const trace = traceCpu(pid);
    await sleep(params.idleSeconds * 1000);
    trace.stop();
    const idle = procSample(pid);
    row["requests while idle"] = audit.since(markIdle).filter((r) => r.user === opstaskUser).length;
    row["CPU while idle, s per minute"] =
      (((idle?.cpuMs ?? Number.NaN) - idleCpu0) / 1000 / params.idleSeconds) * 60;
    row["RSS at the end of the idle minute, MB"] = MB(idle?.rss);
    await snapshot(variant, pid, `${variant.name}-idle`);
  } finally {
    watch.stop();
    await controller.stop();
    await clearNamespace(kc, namespace, params.inFlight);
  }

  if (params.cacheTasks > 0 && template !== undefined) {
    if (cacheNamespace === undefined) {
      cacheNamespace = await createTestNamespace(kc, "at-rest-cache");
      progress(`creating ${params.cacheTasks} settled tasks in ${cacheNamespace}`);
      const cacheWatch = new TaskWatch(kc, cacheNamespace);
      await createTasks(
        kc,
        cacheNamespace,
        Array.from({ length: params.cacheTasks }, (_, i) => ({
          name: `cached-${pad(i)}`,
          etcdName: `etcd-gone-${pad(i)}`,
          ttl: 3600,
        })),
        params.inFlight,
        cacheWatch,
        { ...template, fieldManager: "opstask" },
      );
    }
    progress(`${variant.name}: restart on ${params.cacheTasks} settled tasks`);
    const mark = audit.mark();
    const controller = await start(variant, cacheNamespace, []);
    try {
      const trace = traceCpu(controller.pid);
      await waitQuiet(audit, opstaskUser, controller.pid, 3_000, 600_000);
      const perSecond = trace.stop();
      const sample = procSample(controller.pid);
      row["CPU to take over settled tasks, s"] = (sample?.cpuMs ?? Number.NaN) / 1000;
      row["… CPU in the first second after ready, ms"] = perSecond[0] ?? Number.NaN;
      row["peak RSS taking over, MB"] = MB(sample?.peakRss);
      row["task writes in the takeover"] = audit
        .since(mark)
        .filter((r) => r.user === opstaskUser && isWrite(r) && r.resource.startsWith("etcdopstasks")).length;
      await snapshot(variant, controller.pid, `${variant.name}-takeover`);
    } finally {
      await controller.stop();
    }
  }
  return row;
};

try {
  for (let round = 1; round <= params.rounds; round += 1) {
    const order = round % 2 === 1 ? variants : [...variants].reverse();
    for (const variant of order) {
      progress(`round ${round}: ${variant.name}`);
      const row = await runVariant(variant);
      results.set(variant.name, [...(results.get(variant.name) ?? []), row]);
      progress(`${variant.name}: ${JSON.stringify(row)}`);
    }
  }
} finally {
  await standIn.close();
  await plane.stop();
  rmSync(scratch, { recursive: true, force: true });
}

const keys = [...new Set([...results.values()].flatMap((rows) => rows.flatMap((row) => Object.keys(row))))];
console.log(
  `opstask alone, ${params.rounds} round(s) alternating; ${params.etcds} Etcds, burst ${params.tasks}, idle ${params.idleSeconds} s, ${params.cacheTasks} settled; ${cpus().length} CPUs, Node ${process.version}; load ${fmt(loadStart, 2)} → ${fmt(loadavg()[0] ?? 0, 2)}; Deployment NODE_OPTIONS \`${deployedEnv().NODE_OPTIONS ?? ""}\``,
);
for (const variant of variants)
  console.log(
    `- ${variant.name}: ${variant.cli || "this checkout"}${variant.nodeOptions === undefined ? "" : `, NODE_OPTIONS \`${variant.nodeOptions}\``}${variant.v8Flags === undefined ? "" : `, OPSTASK_V8_FLAGS \`${variant.v8Flags}\``}${variant.nodeArgs === undefined ? "" : `, node flags \`${variant.nodeArgs.join(" ")}\``}`,
  );
table(
  ["figure", ...variants.map((v) => v.name)],
  keys.map((key) => [
    key,
    ...variants.map((v) =>
      (results.get(v.name) ?? [])
        .map((row) => fmt(row[key] ?? Number.NaN, key.includes("ms") ? 0 : 2))
        .join(" · "),
    ),
  ]),
);
process.exit(0);
