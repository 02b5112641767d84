/**
 * etcd-druid's EtcdOpsTask defects that opstask's contract fixes (docs/contract.md §13), each scenario
 * run the same way against the real druid and against opstask, on one local control plane, one
 * controller at a time. Prints what each did; asserts nothing.
 *
 *   1. A label added while a slow snapshot POST is in flight: how many POSTs the task gets.
 *   2. ttlSecondsAfterFinished: 1 on tasks created at once: how many are never deleted.
 *   3. Two tasks for one etcd created at the same moment: how often both are Rejected.
 *   4. Three tasks whose sidecars hang, then one whose sidecar answers: how long the fourth takes.
 *   5. A sidecar that drops the connection 5 times, then answers: how many errors lastErrors keeps.
 *
 * druid as in bench/druid-side-by-side.ts (chart defaults; leader election and webhooks off); opstask
 * as deployed. Run: scripts/bench druid-defects [--ttl-tasks N] [--pairs P]
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { join } from "node:path";
import { CustomObjectsApi, type KubeConfig, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { startControlPlane } from "../src/devcluster/control-plane.ts";
import { createTestNamespace, repoRoot } from "../test/support/cluster.ts";
import { findDruid } from "../test/support/druid-peer.ts";
import { druidCrdFiles, installDruid } from "../test/support/druid-process.ts";
import { installOpstask } from "../test/support/opstask-process.ts";
import { argValue } from "./args.ts";
import { fmt, sleep, taskResource, waitUntil } from "./cluster-support.ts";
import { clearNamespace, createEtcds, parallel, startController, type Which } from "./druid-support.ts";

const ttlTasks = Number(argValue("ttl-tasks") ?? 200);
const pairs = Number(argValue("pairs") ?? 10);

const progress = (line: string): void => {
  process.stderr.write(`[defects ${new Date().toISOString().slice(11, 19)}] ${line}\n`);
};

// ---- a sidecar whose answer depends on the etcd asked (Host: <etcd>-client.<ns>:<port>) -----------

type Answer = { readonly delayMs: number } | "hang" | "drop";
interface Sidecar {
  readonly port: number;
  /** POSTs per etcd name. */
  readonly posts: Map<string, number>;
  /** What to do for the n-th POST (1-based) to an etcd. */
  behave: (etcd: string, nth: number) => Answer;
  close(): Promise<void>;
}

const startSidecar = async (): Promise<Sidecar> => {
  const posts = new Map<string, number>();
  const sockets = new Set<Socket>();
  const sidecar: Sidecar = {
    port: 0,
    posts,
    behave: () => ({ delayMs: 0 }),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    request.resume();
    const etcd = (request.headers.host ?? "").split("-client.")[0] ?? "";
    if (request.method !== "POST") return response.writeHead(404).end();
    const nth = (posts.get(etcd) ?? 0) + 1;
    posts.set(etcd, nth);
    const answer = sidecar.behave(etcd, nth);
    if (answer === "hang") return;
    if (answer === "drop") return request.socket.destroy();
    setTimeout(() => {
      if (!response.destroyed) response.writeHead(200, { "content-type": "application/json" }).end("{}");
    }, answer.delayMs);
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return Object.assign(sidecar, { port: (server.address() as AddressInfo).port });
};

// ---- the scenarios ---------------------------------------------------------------------------------

interface TaskView {
  readonly state?: string;
  readonly lastErrors?: ReadonlyArray<unknown>;
}

interface Scenario {
  readonly title: string;
  readonly etcds: (count: number) => string[];
  /** Runs with the controller started; returns what happened, in words. */
  readonly run: (context: Context) => Promise<string>;
}

interface Context {
  readonly kc: KubeConfig;
  readonly namespace: string;
  readonly sidecar: Sidecar;
}

const api = (kc: KubeConfig) => kc.makeApiClient(CustomObjectsApi);
const createTask = (context: Context, name: string, etcdName: string, ttl = 3600) =>
  api(context.kc).createNamespacedCustomObject({
    ...taskResource,
    namespace: context.namespace,
    body: {
      apiVersion: "druid.gardener.cloud/v1alpha1",
      kind: "EtcdOpsTask",
      metadata: { name, namespace: context.namespace },
      spec: { etcdName, ttlSecondsAfterFinished: ttl, config: { onDemandSnapshot: { type: "full" } } },
    },
  });
const readTask = async (context: Context, name: string): Promise<TaskView | undefined> => {
  try {
    const task = (await api(context.kc).getNamespacedCustomObject({
      ...taskResource,
      namespace: context.namespace,
      name,
    })) as { status?: TaskView };
    return task.status ?? {};
  } catch {
    return undefined;
  }
};
const terminal = (state: string | undefined) =>
  state === "Succeeded" || state === "Failed" || state === "Rejected";
const waitState = async (
  context: Context,
  name: string,
  timeoutMs: number,
): Promise<TaskView | undefined> => {
  let last: TaskView | undefined;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    last = await readTask(context, name);
    if (terminal(last?.state)) return last;
    await sleep(200);
  }
  return last;
};
const names = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => `${prefix}-${i}`);

const scenarios: Scenario[] = [
  {
    title: "label added during a slow (5 s) snapshot POST",
    etcds: () => ["etcd-slow"],
    run: async (context) => {
      context.sidecar.behave = () => ({ delayMs: 5_000 });
      await createTask(context, "slow", "etcd-slow");
      await waitUntil(() => (context.sidecar.posts.get("etcd-slow") ?? 0) > 0, 30_000, 50);
      await api(context.kc).patchNamespacedCustomObject(
        {
          ...taskResource,
          namespace: context.namespace,
          name: "slow",
          body: { metadata: { labels: { edited: "yes" } } },
        },
        setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
      );
      const view = await waitState(context, "slow", 60_000);
      await sleep(3_000);
      return `${context.sidecar.posts.get("etcd-slow") ?? 0} POST(s); ${view?.state ?? "no state"}`;
    },
  },
  {
    title: `ttlSecondsAfterFinished: 1 (${ttlTasks} tasks created at once)`,
    etcds: () => names("etcd-ttl", ttlTasks),
    run: async (context) => {
      const tasks = names("ttl", ttlTasks);
      await parallel(tasks, 20, async (name) => {
        await createTask(context, name, `etcd-${name}`, 1);
      });
      await sleep(30_000);
      const left: string[] = [];
      for (const name of tasks) {
        const view = await readTask(context, name);
        if (view !== undefined) left.push(view.state ?? "no state");
      }
      const states = [...new Set(left)].map((state) => `${left.filter((s) => s === state).length} ${state}`);
      return `${left.length} of ${ttlTasks} never deleted 30 s after creation${left.length === 0 ? "" : ` (${states.join(", ")})`}`;
    },
  },
  {
    title: `two tasks for one etcd created together (${pairs} pairs)`,
    etcds: () => names("etcd-dup", pairs),
    run: async (context) => {
      for (let i = 0; i < pairs; i += 1) {
        await Promise.all([
          createTask(context, `dup-${i}-a`, `etcd-dup-${i}`),
          createTask(context, `dup-${i}-b`, `etcd-dup-${i}`),
        ]);
      }
      const outcomes = new Map<string, number>();
      for (let i = 0; i < pairs; i += 1) {
        const a = await waitState(context, `dup-${i}-a`, 30_000);
        const b = await waitState(context, `dup-${i}-b`, 30_000);
        const pair = [a?.state ?? "none", b?.state ?? "none"].sort().join(" + ");
        outcomes.set(pair, (outcomes.get(pair) ?? 0) + 1);
      }
      return [...outcomes]
        .sort((x, y) => y[1] - x[1])
        .map(([pair, n]) => `${pair}: ${n}`)
        .join("; ");
    },
  },
  {
    title: "3 tasks with hanging sidecars, then 1 with a working one",
    etcds: () => ["etcd-hang-0", "etcd-hang-1", "etcd-hang-2", "etcd-ok"],
    run: async (context) => {
      context.sidecar.behave = (etcd) => (etcd.startsWith("etcd-hang-") ? "hang" : { delayMs: 0 });
      for (let i = 0; i < 3; i += 1) await createTask(context, `hang-${i}`, `etcd-hang-${i}`);
      await waitUntil(
        () => [0, 1, 2].every((i) => (context.sidecar.posts.get(`etcd-hang-${i}`) ?? 0) > 0),
        30_000,
        50,
      );
      const started = performance.now();
      await createTask(context, "after", "etcd-ok");
      const view = await waitState(context, "after", 45_000);
      return view?.state === "Succeeded"
        ? `the 4th task Succeeded after ${fmt((performance.now() - started) / 1000, 1)} s`
        : `the 4th task not done after 45 s (${view?.state ?? "no state"}; ${context.sidecar.posts.get("etcd-ok") ?? 0} POSTs)`;
    },
  },
  {
    title: "sidecar drops the connection 5 times, then answers",
    etcds: () => ["etcd-flaky"],
    run: async (context) => {
      context.sidecar.behave = (_etcd, nth) => (nth <= 5 ? "drop" : { delayMs: 0 });
      await createTask(context, "flaky", "etcd-flaky");
      const view = await waitState(context, "flaky", 90_000);
      return `${view?.state ?? "no state"} after ${context.sidecar.posts.get("etcd-flaky") ?? 0} POSTs; lastErrors keeps ${view?.lastErrors?.length ?? 0} of 5 errors`;
    },
  },
];

// ---- main ----------------------------------------------------------------------------------------

const lookup = await findDruid(progress);
const peer = lookup.found ? lookup.peer : undefined;
if (!lookup.found) console.log(`The etcd-druid column did not run: ${lookup.reason}.`);
const controllers: Which[] = peer === undefined ? ["opstask"] : ["druid", "opstask"];
const plane = await startControlPlane({
  crds:
    peer === undefined
      ? ["druid.gardener.cloud_etcdopstasks.yaml", "druid.gardener.cloud_etcds.yaml"].map((file) =>
          join(repoRoot, "deploy", "crds", file),
        )
      : druidCrdFiles(peer),
});
const results = new Map<string, Map<Which, string>>();
try {
  const kc = plane.makeKubeConfig();
  await installOpstask(plane);
  if (peer !== undefined) await installDruid(plane, peer);
  for (const scenario of scenarios) {
    const row = new Map<Which, string>();
    results.set(scenario.title, row);
    for (const which of controllers) {
      progress(`${scenario.title}: ${which}`);
      const namespace = await createTestNamespace(kc, `defect-${which}`);
      const sidecar = await startSidecar();
      const etcds = scenario.etcds(0);
      await createEtcds(kc, namespace, etcds, sidecar.port, 4);
      const controller = await startController(which, plane, peer, {
        namespace,
        etcds,
        standInPort: sidecar.port,
        druidQps: 5_000,
      });
      try {
        row.set(which, await scenario.run({ kc, namespace, sidecar }));
      } catch (error) {
        row.set(which, `scenario failed: ${error instanceof Error ? error.message : String(error)}`);
      } finally {
        await controller.stop();
        await sidecar.close();
        await clearNamespace(kc, namespace, 10);
      }
    }
  }
} finally {
  await plane.stop();
}

console.log("# etcd-druid's EtcdOpsTask defects, side by side\n");
console.log(
  `| scenario | ${controllers.map((w) => (w === "druid" ? `etcd-druid ${peer?.revision.slice(0, 7) ?? ""}` : "opstask")).join(" | ")} |`,
);
console.log(`|---|${controllers.map(() => "---").join("|")}|`);
for (const [title, row] of results)
  console.log(`| ${title} | ${controllers.map((w) => row.get(w) ?? "–").join(" | ")} |`);
process.exit(0);
