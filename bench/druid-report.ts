/**
 * The table of bench/druid-side-by-side.ts: one row per figure, a column per controller (median and
 * min–max over runs) and opstask's value over druid's.
 */

import { fmt, percentile } from "./cluster-support.ts";
import type { Which } from "./druid-support.ts";

// ---- what one run measures ---------------------------------------------------------------------

export interface BurstRun {
  readonly which: Which;
  readonly singleMs: number[];
  readonly latencies: number[];
  readonly wallMs: number;
  readonly notSucceeded: number;
  readonly cpuMsPerTask: number;
  readonly peakRss: number;
  readonly postsPerTask: number;
  readonly maxPostsPerTask: number;
  readonly burstWritesPerTask: number;
  readonly deleteWritesPerTask: number;
  readonly deleteEventsPerTask: number;
  readonly goneInTime: number;
  readonly idleRequests: number;
  /** CPU over the idle window, scaled to a minute. */
  readonly idleCpuMsPerMinute: number;
  /** RSS at the end of the idle window. */
  readonly idleRss: number;
  /** CPU of each second of the idle window, ms. */
  readonly idleCpuMsPerSecond: readonly number[];
  readonly idleDetail: string;
  /** Requests per task during the burst, by verb and resource (audit log). */
  readonly burstDetail: string;
  readonly startCpuMs: number;
  /** RSS once started and quiet, before any task. */
  readonly startRss: number;
}

/** Node's own floor with the Deployment's flags (bench/node-floor.ts). */
export interface NodeFloor {
  readonly peakRss: number;
  /** RSS at the end (older floors did not say). */
  readonly rss?: number;
  readonly cpuMsPerRequest: number;
  /** CPU from the process's start to its end (older floors did not say). */
  readonly cpuMs?: number;
}

export interface CacheRun {
  readonly which: Which;
  readonly takeoverCpuMs: number;
  readonly quietAfterMs: number;
  /** From ready (caches synced: the start call returned) until quiet. */
  readonly quietAfterReadyMs: number;
  /** CPU of each second from ready until quiet, ms. */
  readonly cpuMsPerSecondAfterReady: readonly number[];
  readonly rss: number;
  readonly peakRss: number;
  readonly takeoverWrites: number;
}

export interface ReportInput {
  readonly params: {
    readonly tasks: number;
    readonly rounds: number;
    readonly single: number;
    readonly deleteTasks: number;
    readonly cacheTasks: number;
    readonly idleSeconds: number;
    readonly inFlight: number;
    readonly sidecarDelayMs: number;
    readonly druidQps: number;
  };
  readonly controllers: readonly Which[];
  readonly druidRevision: string | undefined;
  readonly bursts: readonly BurstRun[];
  readonly caches: readonly CacheRun[];
  readonly problems: readonly string[];
  readonly floor: NodeFloor | undefined;
  /** Node's floor in bench/node-floor.ts's other modes (effect, client-node, list:PATH). */
  readonly floors?: readonly { readonly mode: string; readonly floor: NodeFloor }[];
  /** The machine: CPUs, Node, load at start and end. */
  readonly machine: string;
  readonly wallSeconds: number;
}

/** The median (the mean of the middle two for an even count); NaN for none. */
const medianOf = (values: number[]): number => {
  const finite = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (finite.length === 0) return Number.NaN;
  const middle = Math.floor(finite.length / 2);
  return finite.length % 2 === 1
    ? (finite[middle] ?? Number.NaN)
    : ((finite[middle - 1] ?? Number.NaN) + (finite[middle] ?? Number.NaN)) / 2;
};
/** "median (min–max)" over runs, or the one value. */
const spread = (values: number[], digits: number): string => {
  const finite = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (finite.length === 0) return "–";
  const median = medianOf(finite);
  if (finite.length === 1 || finite[0] === finite.at(-1)) return fmt(median, digits);
  return `${fmt(median, digits)} (${fmt(finite[0] ?? 0, digits)}–${fmt(finite.at(-1) ?? 0, digits)})`;
};
const mb = (bytes: number) => bytes / 2 ** 20;

interface Row {
  readonly figure: string;
  readonly of: (which: Which) => number[];
  readonly digits: number;
}
export const printReport = (input: ReportInput): void => {
  const { params, controllers, bursts, caches, problems } = input;
  const burstsOf = (which: Which) => bursts.filter((run) => run.which === which);
  const cachesOf = (which: Which) => caches.filter((run) => run.which === which);
  const rows: Row[] = [
    {
      figure: `tasks/s, ${fmt(params.tasks, 0)} created at once → Succeeded`,
      digits: 1,
      of: (w) => burstsOf(w).map((r) => (r.latencies.length / r.wallMs) * 1000),
    },
    {
      figure: "p50 create → Succeeded, s",
      digits: 1,
      of: (w) => burstsOf(w).map((r) => percentile(r.latencies, 50) / 1000),
    },
    {
      figure: "p99 create → Succeeded, s",
      digits: 1,
      of: (w) => burstsOf(w).map((r) => percentile(r.latencies, 99) / 1000),
    },
    { figure: "not Succeeded", digits: 0, of: (w) => burstsOf(w).map((r) => r.notSucceeded) },
    {
      figure: "controller CPU per task, ms (burst)",
      digits: 1,
      of: (w) => burstsOf(w).map((r) => r.cpuMsPerTask),
    },
    {
      figure: "controller peak RSS, MB (burst)",
      digits: 1,
      of: (w) => burstsOf(w).map((r) => mb(r.peakRss)),
    },
    {
      figure: "sidecar POSTs per task",
      digits: 2,
      of: (w) => burstsOf(w).map((r) => r.postsPerTask),
    },
    { figure: "… most POSTs for one task", digits: 0, of: (w) => burstsOf(w).map((r) => r.maxPostsPerTask) },
    {
      figure: `single task on an idle controller, p50 ms (${params.single} tasks)`,
      digits: 0,
      of: (w) => burstsOf(w).map((r) => percentile(r.singleMs, 50)),
    },
    {
      figure: "API writes per task to Succeeded (task + status)",
      digits: 2,
      of: (w) => burstsOf(w).map((r) => r.burstWritesPerTask),
    },
    {
      figure: "API writes per task through TTL deletion (task + status)",
      digits: 2,
      of: (w) => burstsOf(w).map((r) => r.deleteWritesPerTask),
    },
    {
      figure: "Events per task through deletion",
      digits: 2,
      of: (w) => burstsOf(w).map((r) => r.deleteEventsPerTask),
    },
    {
      figure: `tasks gone within TTL + 10 s (of ${params.deleteTasks}, TTL 1 s)`,
      digits: 0,
      of: (w) => burstsOf(w).map((r) => r.goneInTime),
    },
    {
      figure: `requests while idle (${params.idleSeconds} s)`,
      digits: 0,
      of: (w) => burstsOf(w).map((r) => r.idleRequests),
    },
    {
      figure: `CPU while idle, s per minute (${params.idleSeconds} s after the burst)`,
      digits: 2,
      of: (w) => burstsOf(w).map((r) => r.idleCpuMsPerMinute / 1000),
    },
    {
      figure: `RSS at the end of the idle window, MB`,
      digits: 1,
      of: (w) => burstsOf(w).map((r) => mb(r.idleRss)),
    },
    {
      figure: "CPU to start with no tasks (Etcds only), s",
      digits: 2,
      of: (w) => burstsOf(w).map((r) => r.startCpuMs / 1000),
    },
    {
      figure: "RSS started with no tasks (Etcds only), MB",
      digits: 1,
      of: (w) => burstsOf(w).map((r) => mb(r.startRss)),
    },
    {
      figure: `RSS with ${fmt(params.cacheTasks, 0)} settled tasks cached, MB (after ${params.idleSeconds} s idle)`,
      digits: 1,
      of: (w) => cachesOf(w).map((r) => mb(r.rss)),
    },
    {
      figure: `peak RSS taking over ${fmt(params.cacheTasks, 0)} settled tasks, MB`,
      digits: 1,
      of: (w) => cachesOf(w).map((r) => mb(r.peakRss)),
    },
    {
      figure: `CPU to take over ${fmt(params.cacheTasks, 0)} settled tasks after a restart, s (process start → quiet)`,
      digits: 2,
      of: (w) => cachesOf(w).map((r) => r.takeoverCpuMs / 1000),
    },
    { figure: "… quiet after, s", digits: 1, of: (w) => cachesOf(w).map((r) => r.quietAfterMs / 1000) },
    {
      figure: "… seconds from ready until quiet",
      digits: 1,
      of: (w) => cachesOf(w).map((r) => r.quietAfterReadyMs / 1000),
    },
    {
      figure: "… task writes during the takeover",
      digits: 0,
      of: (w) => cachesOf(w).map((r) => r.takeoverWrites),
    },
  ];

  console.log("# opstask beside etcd-druid\n");
  console.log(
    `${params.rounds} round(s) alternating; burst ${fmt(params.tasks, 0)} tasks (distinct Etcds), sidecar delay ${params.sidecarDelayMs} ms, creates in flight ${params.inFlight}; druid ${input.druidRevision?.slice(0, 12) ?? "absent"} (client QPS ${params.druidQps}); ${input.machine}. Values: median (min–max) over rounds.\n`,
  );
  const header = ["figure", ...controllers.map((w) => (w === "druid" ? "etcd-druid" : "opstask"))];
  const withRatio = controllers.length === 2;
  console.log(`| ${[...header, ...(withRatio ? ["opstask ÷ druid"] : [])].join(" | ")} |`);
  console.log(`|---|${controllers.map(() => "---:").join("|")}|${withRatio ? "---:|" : ""}`);
  // Rows no run measured (e.g. the restart rows with --cache-tasks 0) are left out.
  for (const row of rows.filter((candidate) => controllers.some((which) => candidate.of(which).length > 0))) {
    const cells = controllers.map((which) => spread(row.of(which), row.digits));
    const ratio = withRatio ? [fmt(medianOf(row.of("opstask")) / medianOf(row.of("druid")), 2)] : [];
    console.log(`| ${[row.figure, ...cells, ...ratio].join(" | ")} |`);
  }
  console.log();
  for (const which of controllers)
    for (const run of burstsOf(which)) {
      console.log(`- ${which} requests per task in the burst: ${run.burstDetail}`);
      console.log(`- ${which} idle requests: ${run.idleDetail}`);
      const busy = run.idleCpuMsPerSecond.flatMap((ms, second) =>
        ms > 0 ? [`${second}: ${fmt(ms, 0)}`] : [],
      );
      console.log(
        `- ${which} idle, CPU ms in the seconds that had any (second: ms): ${busy.join(", ") || "none"}`,
      );
    }
  for (const run of caches)
    console.log(
      `- ${run.which} restart, CPU ms of each second from ready until quiet: ${run.cpuMsPerSecondAfterReady.map((ms) => fmt(ms, 0)).join(" ") || "none"}`,
    );
  if (input.floor !== undefined)
    console.log(
      `- Node's floor (bench/node-floor.ts: the Deployment's Node flags, node:https only, GETs to the same apiserver, no opstask code): peak RSS ${fmt(mb(input.floor.peakRss), 1)} MB, CPU ${fmt(input.floor.cpuMsPerRequest, 2)} ms per request`,
    );
  for (const { mode, floor } of input.floors ?? [])
    console.log(
      mode.startsWith("list:")
        ? `- Node's floor for the takeover (bench/node-floor.ts list: the same flags, node:https only, LIST of the ${fmt(input.params.cacheTasks, 0)} settled tasks in pages of 500, each page parsed and its items kept in a Map): CPU from process start ${fmt(floor.cpuMs ?? Number.NaN, 0)} ms, peak RSS ${fmt(mb(floor.peakRss), 1)} MB`
        : `- Node's floor with ${mode === "effect" ? "Effect loaded and run (Effect, Schema, Stream, Queue, Layer)" : "@kubernetes/client-node loaded, one read through it"} (bench/node-floor.ts ${mode}), then the same 200 GETs: RSS ${fmt(mb(floor.rss ?? Number.NaN), 1)} MB, peak ${fmt(mb(floor.peakRss), 1)} MB`,
    );
  if (problems.length > 0) {
    console.log("\n## Problems seen\n");
    for (const problem of problems) console.log(`- ${problem}`);
  }
  console.log(`\nBenchmark wall time: ${fmt(input.wallSeconds, 0)} s.`);
};
