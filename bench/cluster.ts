/**
 * The controller against a real control plane (kube-apiserver + etcd, etcd-druid's CRDs), with handlers
 * that complete every phase at once. Prints figures; asserts nothing.
 *
 *   1. Throughput: N tasks (TTL 3600, distinct etcds) created by a paced client (`--in-flight` requests
 *      at once); per task create→Succeeded as seen by the benchmark's own watch; the controller's API
 *      requests per task by verb.
 *   2. Deletion: a batch with `ttlSecondsAfterFinished: 1`; writes per task through deletion, time to gone.
 *   3. Idle: the controller's requests over `--idle-seconds` with everything settled.
 *   4. Memory: M tasks created while no controller runs (settled: as the controller leaves a Succeeded
 *      task; process: new), then the controller started on them; its RSS at peak and once quiet.
 *
 * The controller runs in a child process (bench/cluster-controller.ts) so that its memory, CPU and
 * request counts are its own. Each run gets a namespace and a controller of its own.
 *
 * Run: scripts/bench cluster [--tasks N] [--concurrency C[,C…]] [--cache-tasks M] [--delete-tasks D]
 *                            [--idle-seconds S] [--in-flight F] [--cache-mode settled|process]
 *                            [--node-options "FLAGS|FLAGS…"]
 * Defaults: N 1,000, C 3, M 10,000 (settled), D 100, S 30, F 20; about 6 minutes on 2 CPUs.
 * The controller process runs as deployed (bench/deployed-process.ts): bundled as the image bundles
 * the CLI (scripts/bundle.ts), with the environment of deploy/deployment.yaml (NODE_OPTIONS, MALLOC_ARENA_MAX), its kubeconfig loaded as
 * `opstask controller` loads it. `--node-options` runs the memory figure once per `|`-separated
 * NODE_OPTIONS value instead (on the same tasks), to compare V8 settings. Diagnostics: OPSTASK_BENCH_TRACE=1 adds the
 * controller's pass logs to the traces of tasks with a failed write; OPSTASK_BENCH_CHILD_NODE_ARGS
 * passes Node flags to the controller process (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof").
 */
import { cpus, loadavg } from "node:os";
import { type ControlPlane, startControlPlane } from "../src/devcluster/control-plane.ts";
import { createTestNamespace, druidCrds } from "../test/support/cluster.ts";
import { argValue, intArg } from "./args.ts";
import type { Sample } from "./cluster-protocol.ts";
import {
  byVerb,
  ControllerProcess,
  createTasks,
  fmt,
  mb,
  percentile,
  requestDiff,
  reuseConnections,
  type SettledTemplate,
  settle,
  settledTemplate,
  sleep,
  TaskWatch,
  table,
  waitUntil,
} from "./cluster-support.ts";
import { bundleControllerEntry } from "./deployed-process.ts";

// ---- parameters ----------------------------------------------------------------------------------

const params = {
  tasks: intArg("tasks", 1_000),
  concurrency: (argValue("concurrency") ?? "3")
    .split(",")
    .map((c) => Number.parseInt(c, 10))
    .filter((c) => c > 0),
  cacheTasks: intArg("cache-tasks", 10_000),
  deleteTasks: intArg("delete-tasks", 100),
  idleSeconds: intArg("idle-seconds", 30),
  inFlight: Math.max(1, intArg("in-flight", 20)),
  /**
   * settled: the cached tasks are created as the controller leaves a Succeeded task (copied from one
   * it ran), so the controller only loads and looks at them; process: created new, with no controller
   * running, then run by it to Succeeded (minutes at 10,000 tasks).
   */
  cacheMode: argValue("cache-mode") === "process" ? "process" : "settled",
  /** NODE_OPTIONS variants for the memory figure; undefined: the Deployment's. */
  nodeOptions: argValue("node-options")?.split("|"),
};

/** A task the controller ran to Succeeded, for the settled cache. */
let template: SettledTemplate | undefined;

const progress = (line: string): void => {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
};

const pad = (n: number, width: number) => String(n).padStart(width, "0");

/** The non-2xx (or unanswered) requests of a diff, e.g. "patch 409 ×3". */
const failuresOf = (diff: Map<string, number>): string => {
  const failed = [...diff].filter(([key]) => {
    const code = Number(key.split(" ")[1]);
    return !(code >= 200 && code < 300);
  });
  return failed.length === 0 ? "none" : failed.map(([key, count]) => `${key} ×${count}`).join(", ");
};

const perTask = (count: number, tasks: number) => fmt(count / Math.max(1, tasks), 2);
const verbs = ["get", "list", "watch", "create", "patch", "delete"] as const;
const seconds = (ms: number) => fmt(ms / 1000, 1);

const sorted = (values: number[]) => values.sort((a, b) => a - b);

/** Describes what became of tasks that did not reach `want`: their last states. */
const stuckSummary = (watch: TaskWatch, names: readonly string[], done: (name: string) => boolean) => {
  const states = new Map<string, number>();
  const examples: string[] = [];
  for (const name of names) {
    if (done(name)) continue;
    const times = watch.tasks.get(name);
    const state = times?.lastState ?? (times?.createdAt === undefined ? "not created" : "no status");
    states.set(state, (states.get(state) ?? 0) + 1);
    if (examples.length < 5) examples.push(`${name} (${state}, finalizers ${times?.finalizers ?? "?"})`);
  }
  if (states.size === 0) return undefined;
  return `${[...states].map(([s, n]) => `${n} ${s}`).join(", ")}; e.g. ${examples.join(", ")}`;
};

// ---- the runs ------------------------------------------------------------------------------------

interface ThroughputRow {
  c: number;
  createdPerSecond: number;
  wallMs: number;
  latencies: number[];
  notDone: number;
  diff: Map<string, number>;
  cpuMs: number;
  settled: boolean;
  startMs: number;
  writer: string;
}
interface DeletionRow {
  c: number;
  diff: Map<string, number>;
  toSucceeded: number[];
  succeededToGone: number[];
  toGone: number[];
  notGone: number;
  writes: Readonly<Record<string, number>>;
  writer: string;
}
interface IdleRow {
  c: number;
  cached: number;
  diff: Map<string, number>;
  passes: number;
  cpuMs: number;
}
interface MemoryRow {
  c: number;
  nodeOptions: string;
  mode: "settled" | "process";
  createdPerSecond: number;
  baseline: Sample;
  startMs: number;
  /** Start until every task had a pass (settled) or was Succeeded (process). */
  passedMs: number;
  /** Start until the controller was quiet. */
  quietMs: number;
  backlogMs: number;
  notDone: number;
  settledSample: Sample;
  /** After `--idle-seconds` more with nothing to do (no forced GC): the steady state. */
  idleSample: Sample;
  peakRss: number;
  cpuMs: number;
  diff: Map<string, number>;
  settled: boolean;
}

/** The benchmark's watches, latest last (for the traces of troubled tasks). */
const watches: TaskWatch[] = [];

const results = {
  throughput: [] as ThroughputRow[],
  deletion: [] as DeletionRow[],
  idle: [] as IdleRow[],
  memory: [] as MemoryRow[],
  problems: [] as string[],
};

/** The benchmark's own client: one connection pool, so that creating is not the bottleneck. */
const benchKubeConfig = (plane: ControlPlane) => {
  const kc = plane.makeKubeConfig();
  reuseConnections(kc);
  return kc;
};

/** Writer calls that did not simply succeed, e.g. "patchStatus 404 NotFound ×3". */
const writerTrouble = (before: Sample, after: Sample): string => {
  const odd = Object.entries(after.writer)
    .map(([key, n]): [string, number] => [key, n - (before.writer[key] ?? 0)])
    .filter(([key, n]) => n > 0 && !key.endsWith(" ok") && key !== "deleteTask gone");
  return odd.length === 0 ? "none" : odd.map(([key, n]) => `${key} ×${n}`).join(", ");
};

const runAtConcurrency = async (plane: ControlPlane, c: number): Promise<void> => {
  const kc = benchKubeConfig(plane);
  const namespace = await createTestNamespace(kc, `bench-c${c}`);
  const watch = new TaskWatch(kc, namespace);
  watches.push(watch);
  await watch.start();
  const controller = new ControllerProcess(childEntry, plane.kubeconfigPath, namespace, c);
  try {
    await controller.loaded;
    const startMs = await controller.start();

    // 1. throughput
    progress(`c=${c}: creating ${params.tasks} tasks in ${namespace}`);
    const names = Array.from({ length: params.tasks }, (_, i) => `task-${pad(i, 5)}`);
    const before = await controller.sample();
    const t0 = performance.now();
    const created = await createTasks(
      kc,
      namespace,
      names.map((name, i) => ({ name, etcdName: `etcd-${pad(i, 5)}`, ttl: 3600 })),
      params.inFlight,
      watch,
    );
    const createdMs = performance.now() - t0;
    if (created.failures > 0) results.problems.push(`c=${c}: ${created.failures} create attempts failed`);
    const succeeded = (name: string) => watch.tasks.get(name)?.succeededAt !== undefined;
    const allDone = await waitUntil(() => names.every(succeeded), Math.max(120_000, params.tasks * 100), 200);
    const { latencies, last } = watch.succeededSince(names, t0);
    if (!allDone)
      results.problems.push(`c=${c}: not Succeeded in time: ${stuckSummary(watch, names, succeeded)}`);
    progress(`c=${c}: ${latencies.length}/${params.tasks} Succeeded after ${seconds(last - t0)} s; settling`);
    const first = names[0];
    if (template === undefined && first !== undefined && succeeded(first))
      template = await settledTemplate(kc, namespace, first);
    const afterThroughput = await settle(controller);
    results.throughput.push({
      c,
      createdPerSecond: params.tasks / (createdMs / 1000),
      wallMs: last - t0,
      latencies,
      notDone: params.tasks - latencies.length,
      diff: requestDiff(before.requests, afterThroughput.sample.requests),
      cpuMs: afterThroughput.sample.cpuMs - before.cpuMs,
      settled: afterThroughput.settled,
      startMs,
      writer: writerTrouble(before, afterThroughput.sample),
    });

    // 2. deletion
    const deleteNames = Array.from({ length: params.deleteTasks }, (_, i) => `del-${pad(i, 5)}`);
    progress(`c=${c}: creating ${deleteNames.length} tasks with TTL 1 s`);
    const beforeDeletion = afterThroughput.sample;
    await createTasks(
      kc,
      namespace,
      deleteNames.map((name, i) => ({ name, etcdName: `etcd-del-${pad(i, 5)}`, ttl: 1 })),
      params.inFlight,
      watch,
    );
    const gone = (name: string) => watch.tasks.get(name)?.goneAt !== undefined;
    const allGone = await waitUntil(() => deleteNames.every(gone), 90_000, 200);
    if (!allGone)
      results.problems.push(`c=${c}: not deleted in time: ${stuckSummary(watch, deleteNames, gone)}`);
    const afterDeletion = await settle(controller);
    const deletion: DeletionRow = {
      c,
      diff: requestDiff(beforeDeletion.requests, afterDeletion.sample.requests),
      toSucceeded: [],
      succeededToGone: [],
      toGone: [],
      notGone: deleteNames.filter((name) => !gone(name)).length,
      writes: diffRecord(
        beforeDeletion.controller?.writes ?? {},
        afterDeletion.sample.controller?.writes ?? {},
      ),
      writer: writerTrouble(beforeDeletion, afterDeletion.sample),
    };
    for (const name of deleteNames) {
      const t = watch.tasks.get(name);
      if (t?.sentAt === undefined) continue;
      if (t.succeededAt !== undefined) deletion.toSucceeded.push(t.succeededAt - t.sentAt);
      if (t.goneAt !== undefined) deletion.toGone.push(t.goneAt - t.sentAt);
      if (t.goneAt !== undefined && t.succeededAt !== undefined)
        deletion.succeededToGone.push(t.goneAt - t.succeededAt);
    }
    sorted(deletion.toSucceeded);
    sorted(deletion.succeededToGone);
    sorted(deletion.toGone);
    results.deletion.push(deletion);

    // 3. idle
    progress(`c=${c}: idle for ${params.idleSeconds} s`);
    const idleStart = await controller.sample();
    await sleep(params.idleSeconds * 1000);
    const idleEnd = await controller.sample();
    results.idle.push({
      c,
      cached: [...watch.tasks.values()].filter((t) => t.createdAt !== undefined && t.goneAt === undefined)
        .length,
      diff: requestDiff(idleStart.requests, idleEnd.requests),
      passes: (idleEnd.controller?.passes ?? 0) - (idleStart.controller?.passes ?? 0),
      cpuMs: idleEnd.cpuMs - idleStart.cpuMs,
    });
    noteLogs(`c=${c}`, idleEnd);
    if (watch.restarts > 0)
      results.problems.push(`c=${c}: the benchmark's watch restarted ${watch.restarts}×`);
  } finally {
    watch.stop();
    await controller.stop();
  }
};

const runMemory = async (plane: ControlPlane, c: number): Promise<void> => {
  const kc = benchKubeConfig(plane);
  const namespace = await createTestNamespace(kc, "bench-cache");
  const watch = new TaskWatch(kc, namespace);
  watches.push(watch);
  await watch.start();
  const mode = params.cacheMode === "settled" && template !== undefined ? "settled" : "process";
  const names = Array.from({ length: params.cacheTasks }, (_, i) => `cached-${pad(i, 5)}`);
  progress(`memory: creating ${names.length} ${mode === "settled" ? "Succeeded " : ""}tasks in ${namespace}`);
  const t0 = performance.now();
  const created = await createTasks(
    kc,
    namespace,
    names.map((name, i) => ({ name, etcdName: `etcd-${pad(i, 5)}`, ttl: 3600 })),
    params.inFlight,
    watch,
    mode === "settled" ? template : undefined,
  );
  const createdMs = performance.now() - t0;
  if (created.failures > 0) results.problems.push(`memory: ${created.failures} create attempts failed`);
  try {
    for (const nodeOptions of params.nodeOptions ?? [undefined]) {
      await measureMemory(plane, namespace, watch, names, mode, c, createdMs, nodeOptions);
    }
  } finally {
    watch.stop();
  }
};

const measureMemory = async (
  plane: ControlPlane,
  namespace: string,
  watch: TaskWatch,
  names: ReadonlyArray<string>,
  mode: "settled" | "process",
  c: number,
  createdMs: number,
  nodeOptionsOverride: string | undefined,
): Promise<void> => {
  const controller = new ControllerProcess(
    childEntry,
    plane.kubeconfigPath,
    namespace,
    c,
    nodeOptionsOverride,
  );
  try {
    const baseline = await controller.loaded;
    progress(`memory: starting the controller on them (${mode})`);
    const started = performance.now();
    const startMs = await controller.start();
    const before = await controller.sample();
    let peakRss = before.memory.rss;
    const deadline = Date.now() + (mode === "settled" ? 240_000 : Math.max(180_000, params.cacheTasks * 30));
    // Until every task had its pass (settled) or is Succeeded (process), sampling the peak RSS.
    const succeeded = (name: string) => watch.tasks.get(name)?.succeededAt !== undefined;
    let passes = 0;
    let done = false;
    while (!done && Date.now() < deadline) {
      await sleep(1_000);
      const now = await controller.sample();
      peakRss = Math.max(peakRss, now.memory.rss);
      passes = now.controller?.passes ?? 0;
      done = mode === "settled" ? passes >= names.length : names.every(succeeded);
    }
    let last = started;
    for (const name of names) last = Math.max(last, watch.tasks.get(name)?.succeededAt ?? started);
    const passedMs = performance.now() - started;
    if (!done)
      results.problems.push(
        mode === "settled"
          ? `memory: only ${passes} of ${names.length} passes after ${seconds(passedMs)} s (controller stats ${JSON.stringify((await controller.sample()).controller)})`
          : `memory: not Succeeded in time: ${stuckSummary(watch, names, succeeded)}`,
      );
    progress(
      `memory: ${mode === "settled" ? "passes" : "backlog"} done after ${seconds(passedMs)} s; settling`,
    );
    const settled = await settle(controller, 3_000, 60_000);
    const quietMs = performance.now() - started - 3_000;
    peakRss = Math.max(peakRss, settled.sample.memory.rss);
    const measured = await controller.sample(true);
    // V8 shrinks its heap only once allocation has been low for a while (its memory reducer starts
    // after ~8 s); what a controller holds for hours is the RSS after that.
    progress(`memory: idle for ${params.idleSeconds} s`);
    await sleep(params.idleSeconds * 1000);
    const idle = await controller.sample();
    results.memory.push({
      c,
      nodeOptions: controller.nodeOptions,
      mode,
      createdPerSecond: names.length / (createdMs / 1000),
      baseline,
      startMs,
      passedMs,
      quietMs,
      backlogMs: last - started,
      notDone: names.filter((name) => !succeeded(name)).length,
      settledSample: measured,
      idleSample: idle,
      peakRss,
      cpuMs: measured.cpuMs - baseline.cpuMs,
      diff: requestDiff(baseline.requests, measured.requests),
      settled: settled.settled,
    });
    noteLogs("memory", measured);
  } finally {
    await controller.stop();
  }
};

const diffRecord = (
  before: Readonly<Record<string, number>>,
  after: Readonly<Record<string, number>>,
): Record<string, number> =>
  Object.fromEntries(Object.entries(after).map(([key, value]) => [key, value - (before[key] ?? 0)]));

const noteLogs = (run: string, sample: Sample): void => {
  for (const line of sample.traces) {
    results.problems.push(`${run}: controller's writes of a task with a failed write: ${line}`);
    const name = line.slice(line.indexOf("/") + 1, line.indexOf(":"));
    const events = watches.at(-1)?.tasks.get(name)?.events;
    if (events !== undefined) results.problems.push(`${run}: … its watch events: ${events.join(", ")}`);
  }
  const counts = Object.entries(sample.logs.counts);
  if (counts.length === 0) return;
  results.problems.push(
    `${run}: controller logged ${counts.map(([level, n]) => `${n} ${level}`).join(", ")}; first: ${sample.logs.first
      .slice(0, 3)
      .join(" || ")}`,
  );
};

// ---- main ----------------------------------------------------------------------------------------

const began = performance.now();
const loadAtStart = loadavg()[0] ?? 0;
progress("starting the control plane");
const plane = await startControlPlane({ crds: druidCrds });
const childEntry = await bundleControllerEntry();
const stopAll = () => {
  plane.stop().finally(() => process.exit(130));
};
process.once("SIGINT", stopAll);
process.once("SIGTERM", stopAll);
try {
  for (const c of params.concurrency) await runAtConcurrency(plane, c);
  if (params.cacheTasks > 0) await runMemory(plane, params.concurrency[0] ?? 3);
} catch (err) {
  results.problems.push(`aborted: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  results.problems.push(`control plane log tail:\n${plane.logs(15)}`);
} finally {
  await plane.stop();
}

// ---- report --------------------------------------------------------------------------------------

console.log("# Controller against a real control plane\n");
table(
  ["parameter", "value"],
  [
    ["tasks per throughput run (TTL 3600, distinct etcds)", fmt(params.tasks, 0)],
    ["controller concurrency", params.concurrency.join(", ")],
    ["tasks per deletion batch (TTL 1 s)", fmt(params.deleteTasks, 0)],
    ["idle window", `${params.idleSeconds} s`],
    ["tasks cached for the memory figure", `${fmt(params.cacheTasks, 0)} (${params.cacheMode})`],
    ["creates in flight (benchmark client)", String(params.inFlight)],
    ["handlers", "no-op: every phase completes at once"],
    [
      "controller settings",
      "as test/support/controller.ts (requeue 5 s, backoff cap 5 s), in a child process",
    ],
    ["controller's HTTP connections", "opstask's KubeClient (node:https, one keep-alive pool)"],
    ["benchmark's own client", "one shared connection pool"],
    ["control plane", `kube-apiserver + etcd on 127.0.0.1, started in ${seconds(plane.startupMs)} s`],
    [
      "load average (1 min) at start / end",
      `${fmt(loadAtStart, 2)} / ${fmt(loadavg()[0] ?? 0, 2)} (other work on the machine skews the figures)`,
    ],
    [
      "machine",
      `${cpus().length} CPUs (shared by etcd, apiserver, controller, benchmark), Node ${process.version}`,
    ],
  ],
  false,
);

console.log("## 1. Throughput: create → Succeeded\n");
console.log(
  "Latency: from sending the create to the benchmark's watch showing state Succeeded. Requests: the controller's, per task, from just before the first create until it is quiet again.\n",
);
table(
  [
    "concurrency",
    "created/s",
    "wall s",
    "tasks/s",
    "p50 ms",
    "p90 ms",
    "p99 ms",
    "max ms",
    "not Succeeded",
    ...verbs.map((v) => `${v}/task`),
    "writes/task (patch+delete)",
    "non-2xx",
    "writes not ok",
    "controller CPU ms/task",
  ],
  results.throughput.map((r) => [
    `${r.c}${r.settled ? "" : " (not quiet)"}`,
    fmt(r.createdPerSecond, 0),
    seconds(r.wallMs),
    fmt(r.latencies.length / (r.wallMs / 1000), 0),
    fmt(percentile(r.latencies, 50), 0),
    fmt(percentile(r.latencies, 90), 0),
    fmt(percentile(r.latencies, 99), 0),
    fmt(percentile(r.latencies, 100), 0),
    String(r.notDone),
    ...verbs.map((v) => perTask(byVerb(r.diff, v), params.tasks)),
    perTask(byVerb(r.diff, "patch") + byVerb(r.diff, "delete"), params.tasks),
    failuresOf(r.diff),
    r.writer,
    fmt(r.cpuMs / params.tasks, 2),
  ]),
);

console.log("## 2. Happy path through deletion (TTL 1 s)\n");
console.log(
  "Writes: the controller's PATCH and DELETE requests per task, from create until gone (target ≤ 5); events are the `create` requests (Events API).\n",
);
table(
  [
    "concurrency",
    "tasks",
    "writes/task (patch+delete)",
    "patch/task",
    "delete/task",
    "events/task",
    "other requests/task",
    "writes by effect",
    "non-2xx",
    "writes not ok",
    "create→Succeeded p50 ms",
    "Succeeded→gone p50 ms",
    "Succeeded→gone p90 ms",
    "Succeeded→gone max ms",
    "create→gone p50 ms",
    "create→gone max ms",
    "not gone",
  ],
  results.deletion.map((r) => {
    const tasks = params.deleteTasks;
    const writes = byVerb(r.diff, "patch") + byVerb(r.diff, "delete");
    const other = byVerb(r.diff, "get") + byVerb(r.diff, "list") + byVerb(r.diff, "watch");
    return [
      String(r.c),
      String(tasks),
      perTask(writes, tasks),
      perTask(byVerb(r.diff, "patch"), tasks),
      perTask(byVerb(r.diff, "delete"), tasks),
      perTask(byVerb(r.diff, "create"), tasks),
      perTask(other, tasks),
      Object.entries(r.writes)
        .map(([effect, n]) => `${effect} ${perTask(n, tasks)}`)
        .join(", "),
      failuresOf(r.diff),
      r.writer,
      fmt(percentile(r.toSucceeded, 50), 0),
      fmt(percentile(r.succeededToGone, 50), 0),
      fmt(percentile(r.succeededToGone, 90), 0),
      fmt(percentile(r.succeededToGone, 100), 0),
      fmt(percentile(r.toGone, 50), 0),
      fmt(percentile(r.toGone, 100), 0),
      String(r.notGone),
    ];
  }),
);

console.log(`## 3. Idle (${params.idleSeconds} s, everything settled)\n`);
table(
  ["concurrency", "tasks cached", "requests (verb code ×n)", "passes", "controller CPU ms"],
  results.idle.map((r) => [
    String(r.c),
    fmt(r.cached, 0),
    r.diff.size === 0 ? "none" : [...r.diff].map(([key, n]) => `${key} ×${n}`).join(", "),
    fmt(r.passes, 0),
    fmt(r.cpuMs, 0),
  ]),
);

if (results.memory.length > 0) {
  console.log("## 4. Memory with the cache full\n");
  console.log(
    "The controller (in its own process) started on a namespace holding the tasks. settled: tasks created as the controller leaves a Succeeded one (finalizer, annotation, status copied from a task it ran, its times moved and run IDs made unique per task), so it loads them and has one pass each; process: tasks created new while no controller ran, then run by it to Succeeded. RSS: before the controller started (everything imported: the bare process), the peak (sampled every second), once quiet (before and after a forced GC), and after the idle period (the steady state: V8 returns memory only after allocation has been low for a while).\n",
  );
  table(
    [
      "tasks cached",
      "mode",
      "NODE_OPTIONS",
      "concurrency",
      "created/s (no controller)",
      "first LIST synced s",
      "all passed / Succeeded s",
      "quiet after s",
      "not Succeeded",
      "controller CPU s (from start)",
      "requests/task (from start)",
      "non-2xx",
      "baseline RSS MB",
      "peak RSS MB",
      "RSS MB",
      "heapUsed MB",
      "RSS after GC MB",
      "heapUsed after GC MB",
      "heapTotal after GC MB",
      "RSS − baseline MB",
      "RSS after idle MB",
      "heapTotal after idle MB",
    ],
    results.memory.map((r) => {
      const settled = r.settledSample.memoryAfterGc ?? r.settledSample.memory;
      const total = [...r.diff.values()].reduce((a, b) => a + b, 0);
      return [
        `${fmt(params.cacheTasks, 0)}${r.settled ? "" : " (not quiet)"}`,
        r.mode,
        `\`${r.nodeOptions}\``,
        String(r.c),
        fmt(r.createdPerSecond, 0),
        seconds(r.startMs),
        seconds(r.passedMs),
        seconds(r.quietMs),
        String(r.notDone),
        seconds(r.cpuMs),
        perTask(total, params.cacheTasks),
        failuresOf(r.diff),
        mb(r.baseline.memory.rss),
        mb(r.peakRss),
        mb(r.settledSample.memory.rss),
        mb(r.settledSample.memory.heapUsed),
        mb(settled.rss),
        mb(settled.heapUsed),
        mb(settled.heapTotal),
        mb(settled.rss - r.baseline.memory.rss),
        mb(r.idleSample.memory.rss),
        mb(r.idleSample.memory.heapTotal),
      ];
    }),
  );
}

if (results.problems.length > 0) {
  console.log("## Problems seen\n");
  for (const problem of results.problems) console.log(`- ${problem}`);
  console.log();
}
console.log(`Benchmark wall time: ${seconds(performance.now() - began)} s.`);
process.exit(0);
