/**
 * opstask beside the real etcd-druid: both controllers on one local control plane (kube-apiserver +
 * etcd, druid's CRDs), one at a time, alternating, on the same workloads, with the real snapshot
 * handlers posting to one stand-in backup-restore sidecar (test/etcd/support/stand-in.ts; druid
 * reaches it through HTTP_PROXY, opstask through --resolve, see test/support/druid-process.ts).
 * Prints one table with both columns and their ratio; asserts nothing.
 *
 *   1. Single-task latency on an idle controller: `--single` tasks one after another.
 *   2. Burst: `--tasks` tasks (distinct Etcds, TTL 3600) created at once; create → Succeeded per task
 *      (the benchmark's own watch), controller CPU from the first create until quiet, peak RSS
 *      (VmHWM), sidecar POSTs per task.
 *   3. Deletion: `--delete-tasks` tasks with ttlSecondsAfterFinished 1: API writes per task from create
 *      until gone (the apiserver's audit log: the same count for both), tasks gone within TTL + 10 s.
 *   4. Idle: every request the controller makes in `--idle-seconds` with everything settled, its CPU
 *      over that window (per minute) and its RSS at the end of it.
 *   5. Restart on `--cache-tasks` settled tasks (copies of a task that controller itself ran to
 *      Succeeded, made while no controller runs): CPU from process start until quiet, seconds from
 *      ready (caches synced) until quiet and the CPU of each second until then, RSS once idle.
 *   6. Node's floor (bench/node-floor.ts): a process with opstask's Deployment environment that only
 *      loads node:https and sends GETs to the same apiserver: the least any Node controller holds.
 *
 * Controllers as deployed: opstask is the bundled CLI with the Deployment's NODE_OPTIONS and its
 * ServiceAccount and RBAC (deploy/); druid is its binary with its chart's RBAC and default operator
 * configuration, except: leader election and webhooks off, metrics on 127.0.0.1, client QPS lifted
 * (`--druid-qps`, default 5000: the chart's 100 throttles druid), and its Etcd controller's periodic
 * resync at 1 h with the benchmark's Etcds annotated to suspend spec reconciliation (so that druid's
 * other controllers stay out of the task figures). Both run 3 workers (druid's chart default; opstask's
 * default concurrency).
 *
 * druid: OPSTASK_DRUID_BINARY or OPSTASK_DRUID_SOURCE (see test/support/druid-peer.ts); without it one
 * line says so and opstask runs alone.
 *
 * Run: scripts/bench druid-side-by-side [--tasks N] [--rounds R] [--single K] [--delete-tasks D]
 *        [--cache-tasks M] [--idle-seconds S] [--in-flight F] [--sidecar-delay-ms MS]
 *        [--druid-qps Q] [--only druid|opstask] [--cpu-prof DIR] [--opstask-node-options "FLAGS"]
 *        [--opstask-cli BUNDLE]
 * Defaults: N 1,000, R 2, K 10, D 100, M 10,000, S 60, F 20, MS 0; about 25 minutes on 2 CPUs.
 * The load average is printed at the start and end of the run and beside each phase's progress line.
 * `--cpu-prof DIR` runs opstask with --cpu-prof into DIR (one profile per process, on exit) and takes
 * a heap snapshot of it with the settled tasks cached; bench/profile-summary.ts reads both.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import type { KubeConfig } from "@kubernetes/client-node";
import { bundle } from "../scripts/bundle.ts";
import { startControlPlane } from "../src/devcluster/control-plane.ts";
import { Mode, startStandIn } from "../test/etcd/support/stand-in.ts";
import { type AuditedRequest, auditLog, isWrite } from "../test/support/audit-log.ts";
import { createTestNamespace, repoRoot } from "../test/support/cluster.ts";
import { deployedEnv } from "../test/support/deployed-env.ts";
import { type DruidPeer, findDruid } from "../test/support/druid-peer.ts";
import { druidCrdFiles, installDruid } from "../test/support/druid-process.ts";
import { installOpstask } from "../test/support/opstask-process.ts";
import { procSample } from "../test/support/proc-stats.ts";
import { argValue, intArg } from "./args.ts";
import {
  createTasks,
  fmt,
  reuseConnections,
  type SettledTemplate,
  settledTemplate,
  sleep,
  TaskWatch,
  waitUntil,
} from "./cluster-support.ts";
import { type BurstRun, type CacheRun, type NodeFloor, printReport } from "./druid-report.ts";
import {
  clearNamespace,
  createEtcds,
  setQuietCpuShare,
  startController,
  traceCpu,
  userOf,
  type Which,
  waitQuiet,
} from "./druid-support.ts";

const params = {
  tasks: intArg("tasks", 1_000),
  rounds: Math.max(1, intArg("rounds", 2)),
  single: intArg("single", 10),
  deleteTasks: intArg("delete-tasks", 100),
  cacheTasks: intArg("cache-tasks", 10_000),
  idleSeconds: intArg("idle-seconds", 60),
  inFlight: Math.max(1, intArg("in-flight", 20)),
  sidecarDelayMs: intArg("sidecar-delay-ms", 0),
  druidQps: Math.max(1, intArg("druid-qps", 5_000)),
  only: argValue("only") as Which | undefined,
  cpuProf: argValue("cpu-prof"),
  /** opstask's NODE_OPTIONS instead of the Deployment's (to compare V8 settings). */
  opstaskNodeOptions: argValue("opstask-node-options"),
  /** Another bundled opstask CLI (`node scripts/bundle.ts` of another commit), for an A/B. */
  opstaskCli: argValue("opstask-cli"),
};

const progress = (line: string): void => {
  process.stderr.write(
    `[bench ${new Date().toISOString().slice(11, 19)} load ${fmt(loadavg()[0] ?? 0, 2)}] ${line}\n`,
  );
};
const pad = (n: number) => String(n).padStart(5, "0");

const taskWrites = (requests: readonly AuditedRequest[], user: string) =>
  requests.filter((r) => r.user === user && isWrite(r) && r.resource.startsWith("etcdopstasks")).length;
const eventWrites = (requests: readonly AuditedRequest[], user: string) =>
  requests.filter((r) => r.user === user && isWrite(r) && r.resource === "events").length;

const fieldManagerOf = (which: Which) => (which === "druid" ? "etcd-druid" : "opstask");

// ---- main ----------------------------------------------------------------------------------------

const began = performance.now();
const loadAtStart = loadavg()[0] ?? 0;
const lookup = await findDruid(progress);
const peer: DruidPeer | undefined = lookup.found ? lookup.peer : undefined;
if (!lookup.found) console.log(`The etcd-druid comparison did not run: ${lookup.reason}.`);
const controllers: Which[] = (["druid", "opstask"] as const).filter(
  (which) =>
    (which === "opstask" || peer !== undefined) && (params.only === undefined || params.only === which),
);

if (params.cpuProf !== undefined) {
  mkdirSync(params.cpuProf, { recursive: true });
  setQuietCpuShare(0.1);
}
const scratch = mkdtempSync(join(tmpdir(), "opstask-druid-bench-"));
const audit = auditLog(scratch, [userOf("druid"), userOf("opstask")]);
progress("starting the control plane");
const plane = await startControlPlane({
  crds:
    peer === undefined
      ? [
          join(repoRoot, "deploy", "crds", "druid.gardener.cloud_etcdopstasks.yaml"),
          join(repoRoot, "deploy", "crds", "druid.gardener.cloud_etcds.yaml"),
        ]
      : druidCrdFiles(peer),
  apiserverArgs: audit.apiserverArgs,
});
const kc: KubeConfig = plane.makeKubeConfig();
reuseConnections(kc);
await installOpstask(plane);
if (peer !== undefined) await installDruid(plane, peer);
const standIn = await startStandIn({
  mode: params.sidecarDelayMs > 0 ? Mode.delay(params.sidecarDelayMs, Mode.ok("{}")) : Mode.ok("{}"),
});
const templates = new Map<Which, SettledTemplate>();
const bursts: BurstRun[] = [];
const caches: CacheRun[] = [];
const problems: string[] = [];

const stopAll = () => {
  plane.stop().finally(() => process.exit(130));
};
process.once("SIGINT", stopAll);
process.once("SIGTERM", stopAll);

/** Node flags for opstask when profiling: a CPU profile on exit, a heap snapshot on SIGUSR2. */
const profiling = (which: Which): { nodeArgs?: string[]; nodeOptions?: string } => ({
  ...(params.cpuProf === undefined || which !== "opstask"
    ? {}
    : { nodeArgs: ["--cpu-prof", `--diagnostic-dir=${params.cpuProf}`, "--heapsnapshot-signal=SIGUSR2"] }),
  ...(params.opstaskNodeOptions === undefined || which !== "opstask"
    ? {}
    : { nodeOptions: params.opstaskNodeOptions }),
  ...(params.opstaskCli === undefined || which !== "opstask" ? {} : { opstaskCli: params.opstaskCli }),
});

const runBurst = async (which: Which, round: number): Promise<void> => {
  const user = userOf(which);
  const namespace = await createTestNamespace(kc, `burst-${which}`);
  const names = (prefix: string, count: number) =>
    Array.from({ length: count }, (_, i) => `${prefix}-${pad(i)}`);
  const single = names("single", params.single);
  const burst = names("burst", params.tasks);
  const deletion = names("del", params.deleteTasks);
  const etcds = [...single, ...burst, ...deletion].map((task) => `etcd-${task}`);
  progress(`${which} round ${round}: ${etcds.length} Etcds in ${namespace}`);
  await createEtcds(kc, namespace, etcds, standIn.port, params.inFlight);
  const watch = new TaskWatch(kc, namespace);
  await watch.start();
  const controller = await startController(which, plane, peer, {
    namespace,
    etcds,
    standInPort: standIn.port,
    druidQps: params.druidQps,
    ...profiling(which),
  });
  try {
    if (!(await waitQuiet(audit, user, controller.pid))) problems.push(`${which}: not quiet after start`);
    const started = procSample(controller.pid);
    const startCpuMs = started?.cpuMs ?? Number.NaN;
    const startRss = started?.rss ?? Number.NaN;
    const succeeded = (name: string) => watch.tasks.get(name)?.succeededAt !== undefined;
    const spec = (name: string, ttl: number) => ({ name, etcdName: `etcd-${name}`, ttl });

    // 1. single tasks on the idle controller
    const singleMs: number[] = [];
    for (const name of single) {
      await createTasks(kc, namespace, [spec(name, 3600)], 1, watch);
      await waitUntil(() => succeeded(name), 30_000, 5);
      const times = watch.tasks.get(name);
      if (times?.succeededAt !== undefined && times.sentAt !== undefined)
        singleMs.push(times.succeededAt - times.sentAt);
      await sleep(300);
    }
    await waitQuiet(audit, user, controller.pid, 2_000);

    // 2. the burst
    progress(`${which} round ${round}: ${burst.length} tasks at once`);
    const mark = audit.mark();
    const cpu0 = procSample(controller.pid)?.cpuMs ?? Number.NaN;
    const posts0 = standIn.requests.length;
    const t0 = performance.now();
    await createTasks(
      kc,
      namespace,
      burst.map((name) => spec(name, 3600)),
      params.inFlight,
      watch,
    );
    await waitUntil(() => burst.every(succeeded), Math.max(180_000, params.tasks * 200), 100);
    const { latencies, last } = watch.succeededSince(burst, t0);
    if (!(await waitQuiet(audit, user, controller.pid)))
      problems.push(`${which} round ${round}: not quiet after the burst`);
    const cpu1 = procSample(controller.pid)?.cpuMs ?? Number.NaN;
    const burstRequests = audit.since(mark);
    const perTask = new Map<string, number>();
    for (const r of burstRequests)
      if (r.user === user)
        perTask.set(`${r.verb} ${r.resource}`, (perTask.get(`${r.verb} ${r.resource}`) ?? 0) + 1);
    const posts = new Map<string, number>();
    for (const request of standIn.requests.slice(posts0))
      if (request.method === "POST") posts.set(request.host ?? "", (posts.get(request.host ?? "") ?? 0) + 1);
    const first = burst[0];
    if (first !== undefined && !templates.has(which)) {
      const template = await settledTemplate(kc, namespace, first);
      if (template !== undefined) templates.set(which, { ...template, fieldManager: fieldManagerOf(which) });
    }

    // 3. deletion after a TTL of 1 s
    progress(`${which} round ${round}: ${deletion.length} tasks with TTL 1 s`);
    const markDeletion = audit.mark();
    await createTasks(
      kc,
      namespace,
      deletion.map((name) => spec(name, 1)),
      params.inFlight,
      watch,
    );
    const gone = (name: string) => watch.tasks.get(name)?.goneAt !== undefined;
    await waitUntil(() => deletion.every(succeeded), 60_000, 100);
    await waitUntil(() => deletion.every(gone), 20_000, 100);
    await waitQuiet(audit, user, controller.pid, 2_000, 30_000);
    const deletionRequests = audit.since(markDeletion);
    const goneInTime = deletion.filter((name) => {
      const times = watch.tasks.get(name);
      return (
        times?.goneAt !== undefined &&
        times.succeededAt !== undefined &&
        times.goneAt - times.succeededAt <= 11_000
      );
    }).length;

    // 4. idle
    progress(`${which} round ${round}: idle ${params.idleSeconds} s`);
    const markIdle = audit.mark();
    const idleCpu0 = procSample(controller.pid)?.cpuMs ?? Number.NaN;
    const idleTrace = traceCpu(controller.pid);
    await sleep(params.idleSeconds * 1000);
    const idleCpuMsPerSecond = idleTrace.stop();
    const idle = audit.since(markIdle).filter((r) => r.user === user);
    const byVerb = new Map<string, number>();
    for (const r of idle)
      byVerb.set(`${r.verb} ${r.resource}`, (byVerb.get(`${r.verb} ${r.resource}`) ?? 0) + 1);

    const sample = procSample(controller.pid);
    const idleCpuMs = (sample?.cpuMs ?? Number.NaN) - idleCpu0;
    bursts.push({
      which,
      singleMs: singleMs.sort((a, b) => a - b),
      latencies,
      wallMs: last - t0,
      notSucceeded: burst.length - latencies.length,
      cpuMsPerTask: (cpu1 - cpu0) / burst.length,
      peakRss: sample?.peakRss ?? Number.NaN,
      postsPerTask: [...posts.values()].reduce((a, b) => a + b, 0) / burst.length,
      maxPostsPerTask: Math.max(0, ...posts.values()),
      burstWritesPerTask: taskWrites(burstRequests, user) / burst.length,
      deleteWritesPerTask: taskWrites(deletionRequests, user) / deletion.length,
      deleteEventsPerTask: eventWrites(deletionRequests, user) / deletion.length,
      goneInTime,
      idleRequests: idle.length,
      idleCpuMsPerMinute: (idleCpuMs / params.idleSeconds) * 60,
      idleRss: sample?.rss ?? Number.NaN,
      idleCpuMsPerSecond,
      idleDetail: [...byVerb].map(([key, n]) => `${key} ×${n}`).join(", ") || "none",
      burstDetail: [...perTask]
        .sort((a, b) => b[1] - a[1])
        .map(([key, n]) => `${key} ${fmt(n / burst.length, 2)}`)
        .join(", "),
      startCpuMs,
      startRss,
    });
  } finally {
    watch.stop();
    await controller.stop();
    await clearNamespace(kc, namespace, params.inFlight);
  }
};

const runCache = async (which: Which): Promise<void> => {
  const template = templates.get(which);
  if (template === undefined) {
    problems.push(`${which}: no Succeeded task to copy for the restart figure`);
    return;
  }
  const user = userOf(which);
  const namespace = await createTestNamespace(kc, `cache-${which}`);
  const watch = new TaskWatch(kc, namespace);
  const names = Array.from({ length: params.cacheTasks }, (_, i) => `cached-${pad(i)}`);
  progress(`${which}: creating ${names.length} settled tasks in ${namespace}`);
  await createTasks(
    kc,
    namespace,
    names.map((name, i) => ({ name, etcdName: `etcd-gone-${pad(i)}`, ttl: 3600 })),
    params.inFlight,
    watch,
    template,
  );
  progress(`${which}: starting it on them`);
  const mark = audit.mark();
  const started = performance.now();
  const controller = await startController(which, plane, peer, {
    namespace,
    etcds: [],
    standInPort: standIn.port,
    druidQps: params.druidQps,
    ...profiling(which),
  });
  const ready = performance.now();
  try {
    // The CPU of each second from ready until quiet: what keeps a controller busy after its start.
    const trace = traceCpu(controller.pid);
    const quiet = await waitQuiet(audit, user, controller.pid, 3_000, 600_000);
    const perSecond = trace.stop();
    if (!quiet) problems.push(`${which}: not quiet within 10 min of the restart`);
    const quietAfterMs = performance.now() - started - 3_000;
    const quietAfterReadyMs = performance.now() - ready - 3_000;
    const cpu = procSample(controller.pid)?.cpuMs ?? Number.NaN;
    const writes = taskWrites(audit.since(mark), user);
    progress(`${which}: idle ${params.idleSeconds} s with ${names.length} tasks cached`);
    await sleep(params.idleSeconds * 1000);
    const sample = procSample(controller.pid);
    // The least a Node process spends to LIST and keep these tasks (after the sample: it shares the CPUs).
    if (which === "opstask" && params.cpuProf === undefined)
      await measureFloors(
        [`list:/apis/druid.gardener.cloud/v1alpha1/namespaces/${namespace}/etcdopstasks`],
        0,
      );
    if (params.cpuProf !== undefined && which === "opstask") {
      // A heap snapshot of the steady state (--heapsnapshot-signal), written into the profile directory.
      const before = readdirSync(params.cpuProf).length;
      process.kill(controller.pid, "SIGUSR2");
      await waitUntil(() => readdirSync(params.cpuProf ?? ".").length > before, 120_000, 500);
      await sleep(5_000);
    }
    caches.push({
      which,
      takeoverCpuMs: cpu,
      quietAfterMs,
      quietAfterReadyMs,
      cpuMsPerSecondAfterReady: perSecond,
      rss: sample?.rss ?? Number.NaN,
      peakRss: sample?.peakRss ?? Number.NaN,
      takeoverWrites: writes,
    });
  } finally {
    await controller.stop();
    await clearNamespace(kc, namespace, params.inFlight);
  }
};

/** Node's floor with the Deployment's environment (bench/node-floor.ts), on the same apiserver. */
const measureFloor = async (mode: string, requests: number): Promise<NodeFloor | undefined> => {
  // Bundled, as the controller is: --jitless leaves Node no WebAssembly, so no TypeScript stripping.
  floorEntry ??= bundle("bench/node-floor.ts", ".build/node-floor");
  const entry = await floorEntry;
  const caFile = join(scratch, "floor-ca.pem");
  writeFileSync(caFile, plane.caPem);
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    ...deployedEnv(),
    ...(params.opstaskNodeOptions === undefined ? {} : { NODE_OPTIONS: params.opstaskNodeOptions }),
  };
  const run = spawnSync(
    process.execPath,
    [entry, plane.server, plane.token, caFile, String(requests), mode],
    {
      encoding: "utf8",
      env,
      timeout: 120_000,
    },
  );
  const line = run.stdout.trim().split("\n").at(-1) ?? "";
  try {
    return JSON.parse(line) as NodeFloor;
  } catch {
    problems.push(
      `Node's floor (${mode}) did not measure: ${run.stderr.trim().slice(0, 500) || `exit ${run.status}`}`,
    );
    return undefined;
  }
};
let floorEntry: Promise<string> | undefined;
/** Node's floor with more than node:https: Effect loaded, client-node loaded, a LIST of the settled tasks. */
const floors: { mode: string; floor: NodeFloor }[] = [];
const measureFloors = async (modes: readonly string[], requests: number): Promise<void> => {
  for (const mode of modes) {
    const floor = await measureFloor(mode, requests);
    if (floor !== undefined) floors.push({ mode, floor });
  }
};
let floor: NodeFloor | undefined;

try {
  floor = await measureFloor("https", 200);
  await measureFloors(["effect", "client-node"], 200);
  for (let round = 1; round <= params.rounds; round += 1) {
    // Alternate who goes first, so that neither always meets the fresher apiserver.
    const order = round % 2 === 1 ? controllers : [...controllers].reverse();
    for (const which of order) await runBurst(which, round);
  }
  if (params.cacheTasks > 0) for (const which of controllers) await runCache(which);
} catch (error) {
  problems.push(`aborted: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  problems.push(`control plane log tail:\n${plane.logs(10)}`);
} finally {
  await standIn.close();
  await plane.stop();
  rmSync(scratch, { recursive: true, force: true });
}

printReport({
  params,
  controllers,
  druidRevision: peer?.revision,
  bursts,
  caches,
  problems,
  floor,
  floors,
  machine: `opstask NODE_OPTIONS \`${params.opstaskNodeOptions ?? deployedEnv().NODE_OPTIONS ?? ""}\`; ${cpus().length} CPUs, Node ${process.version}; load ${fmt(loadAtStart, 2)} → ${fmt(loadavg()[0] ?? 0, 2)}`,
  wallSeconds: (performance.now() - began) / 1000,
});
process.exit(0);
