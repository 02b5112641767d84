/**
 * The fault suite: the controller as deployed (bundled, the Deployment's flags and environment, leader
 * election on) runs batches of snapshot tasks on the local control plane (src/devcluster) while one
 * fault is injected, against a stand-in backup-restore sidecar that counts the snapshot POSTs
 * (test/etcd/support/stand-in.ts). Each fault gets a control plane, namespace and controller of
 * its own. Prints one table; asserts nothing.
 *
 * Per fault, 12 tasks (one per Etcd, each POST answered after 2 s) are created; once 3 POSTs arrived
 * the fault is injected; when it is lifted, 4 more tasks are created ("late"), whose first status
 * shows when the controller serves new work again (the time to recovery).
 *
 *   none               no fault (for comparison)
 *   kill-9             SIGKILL of the controller mid-call; restarted after 1 s (as the kubelet would)
 *   frozen-leader      two controllers; SIGSTOP of the leader until the other one has held the Lease
 *                      for 10 s, then SIGCONT: the old leader must write nothing after losing it
 *   apiserver-restart  SIGKILL of kube-apiserver, started again 2 s later on the same address
 *   apiserver-outage   the same with kube-apiserver down for 60 s: the leader loses the Lease (exits,
 *                      restarted), and /readyz turns 503 once nothing was answered for 30 s
 *   etcd-outage        SIGSTOP of etcd for 30 s, then SIGCONT
 *   watch-expiry       (--watch-cache=false) every watch cut and held at a proxy while tasks are created
 *                      and etcd is compacted; released, the watches start from a compacted revision: 410
 *   throttle-429       a proxy answers 30 % of all requests with 429 and Retry-After: 1, all along
 *
 * Run: scripts/faults [--only NAME[,NAME…]] [--tasks N] [--late L] [--post-ms MS] [--binary BUNDLED_MAIN_JS]
 * About 8 minutes on 2 CPUs.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CustomObjectsApi } from "@kubernetes/client-node";
import { bundle } from "../scripts/bundle.ts";
import { startControlPlane } from "../src/devcluster/control-plane.ts";
import { writeKubeconfig } from "../src/devcluster/kubeconfig.ts";
import { createReadyEtcd } from "../src/devcluster/ready-etcd.ts";
import { Mode, startStandIn } from "../test/etcd/support/stand-in.ts";
import { createTestNamespace, repoRoot } from "../test/support/cluster.ts";
import { argValue } from "./args.ts";
import { type FaultSpec, faults } from "./faults-cases.ts";
import { type FaultProxy, startFaultProxy } from "./faults-proxy.ts";
import {
  druid,
  leaseHolderPid,
  leaseName,
  SupervisedController,
  sleep,
  TaskPoller,
} from "./faults-support.ts";

const params = {
  only: argValue("only")?.split(","),
  tasks: Number(argValue("tasks") ?? 12),
  late: Number(argValue("late") ?? 4),
  postMs: Number(argValue("post-ms") ?? 2000),
};

const progress = (line: string): void => {
  process.stderr.write(`[faults ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
};

const crds = ["druid.gardener.cloud_etcdopstasks.yaml", "druid.gardener.cloud_etcds.yaml"].map((file) =>
  join(repoRoot, "deploy", "crds", file),
);

const seconds = (ms: number | undefined): string =>
  ms === undefined || Number.isNaN(ms) ? "-" : (ms / 1000).toFixed(1);

interface Row {
  readonly fault: string;
  readonly cells: string[];
  readonly notes: string[];
}

const runFault = async (name: string, spec: FaultSpec, binary: string): Promise<Row> => {
  progress(`${name}: starting a control plane`);
  const cp = await startControlPlane({
    crds,
    ...(spec.apiserverArgs === undefined ? {} : { apiserverArgs: spec.apiserverArgs }),
  });
  const dir = mkdtempSync(join(tmpdir(), "opstask-faults-"));
  const controllers: SupervisedController[] = [];
  const proxies: FaultProxy[] = [];
  const standIn = await startStandIn({ mode: Mode.delay(params.postMs, Mode.ok("{}")) });
  let poller: TaskPoller | undefined;
  try {
    const kc = cp.makeKubeConfig();
    const namespace = await createTestNamespace(kc, "faults");
    const etcds = Array.from(
      { length: params.tasks + params.late },
      (_, i) => `e${String(i).padStart(2, "0")}`,
    );
    for (const etcd of etcds)
      await createReadyEtcd(kc, { name: etcd, namespace, backupPort: standIn.port, storePrefix: etcd });
    const resolve = etcds.map((etcd) => `${etcd}-client.${namespace}:${standIn.port}:127.0.0.1`).join(",");
    for (let i = 0; i < spec.controllers; i++) {
      let kubeconfig = cp.kubeconfigPath;
      if (spec.via === "proxy") {
        const proxy = await startFaultProxy(cp.server, cp.caPem);
        proxies.push(proxy);
        kubeconfig = join(dir, `kubeconfig-${i}`);
        writeKubeconfig(kubeconfig, {
          server: proxy.url,
          caPem: cp.caPem,
          token: cp.token,
          userName: "admin",
        });
      }
      controllers.push(
        await SupervisedController.start(`c${i}`, binary, [
          `--kubeconfig=${kubeconfig}`,
          "--leader-elect",
          `--leader-election-namespace=${namespace}`,
          `--leader-election-id=${leaseName}`,
          `--resolve=${resolve}`,
        ]),
      );
    }
    for (let i = 0; i < 300 && (await leaseHolderPid(kc, namespace)) === undefined; i++) await sleep(100);
    const tasksPoller = new TaskPoller(kc, namespace);
    poller = tasksPoller;
    const api = kc.makeApiClient(CustomObjectsApi);
    const create = async (from: number, count: number) => {
      await Promise.all(
        Array.from({ length: count }, async (_, k) => {
          const i = from + k;
          const task = `t${String(i).padStart(2, "0")}`;
          tasksPoller.created(task, Date.now());
          await api.createNamespacedCustomObject({
            ...druid,
            plural: "etcdopstasks",
            namespace,
            body: {
              apiVersion: `${druid.group}/${druid.version}`,
              kind: "EtcdOpsTask",
              metadata: { name: task, namespace },
              spec: {
                etcdName: etcds[i],
                ttlSecondsAfterFinished: 2,
                config: { onDemandSnapshot: { type: "full" } },
              },
            },
          });
        }),
      );
    };
    const posts = async (n: number) => {
      for (let i = 0; i < 600 && standIn.requests.filter((r) => r.method === "POST").length < n; i++)
        await sleep(100);
    };
    progress(`${name}: ${params.tasks} tasks`);
    await create(0, params.tasks);
    const injected = await spec.inject({
      cp,
      namespace,
      controllers,
      proxies,
      posts,
      createLate: () => create(params.tasks, params.late),
    });
    progress(`${name}: injected; waiting for every task to finish and go (TTL 2 s)`);
    const deadline = Date.now() + 150_000;
    const all = () => [...tasksPoller.tasks.values()];
    while (Date.now() < deadline && all().some((t) => t.goneAt === undefined)) await sleep(250);
    await sleep(1_000);
    for (const proxy of proxies) proxy.throttle(0);

    const tasks = [...tasksPoller.tasks];
    const postsByEtcd = new Map<string, number>();
    for (const r of standIn.requests)
      if (r.method === "POST") {
        const etcd = (r.host ?? "").split("-client.")[0] ?? "";
        postsByEtcd.set(etcd, (postsByEtcd.get(etcd) ?? 0) + 1);
      }
    const perTask = tasks.map(([task]) => postsByEtcd.get(`e${task.slice(1)}`) ?? 0);
    const finished = tasks.filter(([, t]) => t.terminalAt !== undefined || t.goneAt !== undefined);
    const stuck = tasks.filter(([, t]) => t.goneAt === undefined);
    const late = tasks.slice(params.tasks).map(([, t]) => t);
    const lateServed = Math.min(...late.map((t) => t.statusAt ?? Number.POSITIVE_INFINITY));
    const allDone = Math.max(...tasks.map(([, t]) => t.terminalAt ?? t.goneAt ?? Number.POSITIVE_INFINITY));
    const restarts = controllers.reduce((sum, c) => sum + c.incarnations.length - 1, 0);
    const metric = (series: string) => controllers.reduce((sum, c) => sum + c.metric(series), 0);
    const faultsMetric = (operation: string, fault: string) =>
      metric(`opstask_api_faults_total{operation="${operation}",fault="${fault}"}`);
    const warnings = controllers.flatMap((c) => c.logs);
    const kindsOfWarning = new Map<string, number>();
    for (const w of warnings) {
      const kind = `${w.level} ${w.message.replace(/[0-9a-z-]+\/t\d\d|\d+(\.\d+)?( ?m?s)?/g, "…").slice(0, 90)}`;
      kindsOfWarning.set(kind, (kindsOfWarning.get(kind) ?? 0) + 1);
    }
    const notReady = controllers.flatMap((c) => c.notReady);
    const notes = [
      ...injected.notes,
      `restarts: ${controllers.flatMap((c) => c.incarnations.slice(0, -1).map((i) => i.exit ?? "?")).join(", ") || "none"}`,
      `faults counted: watch expired ${faultsMetric("watch", "expired")}, watch failed ${faultsMetric("watch", "failed")}, ` +
        `list failed ${faultsMetric("list", "failed")}, writes retried ${["addFinalizer", "patchStatus", "deleteTask", "removeFinalizer"].reduce((s, op) => s + faultsMetric(op, "retried"), 0)}, ` +
        `writes slow ${["addFinalizer", "patchStatus", "deleteTask", "removeFinalizer"].reduce((s, op) => s + faultsMetric(op, "slow"), 0)}, ` +
        `events retried ${faultsMetric("event", "retried")}, events dropped ${faultsMetric("event", "dropped")} (last scrape of each process)`,
      `/readyz not ready: ${notReady.length} polls${notReady.length === 0 ? "" : ` (${[...new Set(notReady.map((n) => n.reason.replace(/\d+/g, "N")))].join("; ")})`}`,
      ...[...kindsOfWarning]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 8)
        .map(([kind, n]) => `log ×${n}: ${kind}`),
    ];
    return {
      fault: name,
      cells: [
        String(tasks.length),
        String(finished.length),
        String(perTask.reduce((a, b) => a + b, 0)),
        String(Math.max(...perTask)),
        String(perTask.filter((n) => n > 1).length),
        String(stuck.length),
        String(stuck.filter(([, t]) => t.finalizers > 0).length),
        String(restarts),
        seconds(lateServed - injected.liftedAt),
        seconds(allDone - injected.liftedAt),
      ],
      notes,
    };
  } finally {
    poller?.stop();
    await Promise.all(controllers.map((c) => c.stop()));
    await Promise.all(proxies.map((p) => p.close()));
    await standIn.close();
    await cp.stop();
    rmSync(dir, { recursive: true, force: true });
  }
};

const header = [
  "fault",
  "tasks",
  "finished",
  "POSTs",
  "max POSTs/task",
  "tasks with 2+ POSTs",
  "stuck",
  "finalizers left",
  "restarts",
  "late task served (s)",
  "all finished (s)",
];

const printTable = (rows: readonly Row[]): string => {
  const lines = [header, ...rows.map((row) => [row.fault, ...row.cells])];
  const widths = header.map((_, i) => Math.max(...lines.map((line) => (line[i] ?? "").length)));
  const render = (line: readonly string[]) =>
    `| ${line.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0))).join(" | ")} |`;
  return [
    render(lines[0] ?? []),
    `|${widths.map((w, i) => (i === 0 ? `${"-".repeat(w + 1)}-` : `${"-".repeat(w + 1)}:`)).join("|")}|`,
    ...lines.slice(1).map(render),
  ].join("\n");
};

const selected = Object.entries(faults).filter(
  ([name]) => params.only === undefined || params.only.includes(name),
);
// --binary: another bundled controller (e.g. an older commit's, to compare); default: this tree's.
const binary = argValue("binary") ?? (await bundle("src/cli/main.ts", ".build/faults"));
const rows: Row[] = [];
for (const [name, spec] of selected) {
  const row = await runFault(name, spec, binary).catch(
    (error: unknown): Row => ({
      fault: name,
      cells: header.slice(1).map(() => "?"),
      notes: [`the run failed: ${error instanceof Error ? error.message.split("\n")[0] : String(error)}`],
    }),
  );
  rows.push(row);
  progress(`${name}: ${row.cells.join(" | ")}`);
}
process.stdout.write(`${printTable(rows)}\n\n`);
process.stdout.write(
  "late task served: from the fault's end (see notes) to the first status of a task created then;\n" +
    "all finished: from the fault's end to the last task's terminal state. Tasks: one per Etcd, TTL 2 s.\n\n",
);
for (const row of rows)
  process.stdout.write(`${row.fault}:\n${row.notes.map((n) => `  - ${n}`).join("\n")}\n`);
process.exit(0);
