/**
 * A library controller's memory, started the documented way (docs/library.md, "Deploying"): the
 * operator's main bundled by `opstask bundle` and run with the generated Deployment's Node settings
 * (NODE_OPTIONS, MALLOC_ARENA_MAX, and --optimize-for-size on node's command line), against the same
 * main run plainly from its TypeScript sources (`node main.ts`). On a local control plane, each
 * prints its RSS idle (Lease held, 15 s quiet), its peak during a burst of 100 Greetings, and its RSS
 * once all 100 Succeeded and 15 s passed. The flagship's figure to compare: ≤ 85 MB.
 *
 *   scripts/bench library-memory [--tasks 100] [--quiet-ms 15000]
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { bundle } from "../scripts/bundle.ts";
import { tunedNodeEnv, tunedV8Flags } from "../src/cli/deploy/node-settings.ts";
import { startControlPlane } from "../src/testing.ts";
import { procSample } from "../test/support/proc-stats.ts";
import { intArg } from "./args.ts";

const taskCount = intArg("tasks", 100);
const quietMs = intArg("quiet-ms", 15_000);
const mb = (bytes: number) => (bytes / 2 ** 20).toFixed(1);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const work = mkdtempSync(join(tmpdir(), "opstask-library-memory-"));
// The example imports "opstask" by name: in the repository that resolves to src/ under the
// opstask-source condition, which this process was not started with.
const crdFile = join(work, "crd.yaml");
execFileSync(process.execPath, [
  "--conditions=opstask-source",
  "src/cli/main.ts",
  "crd",
  "--module",
  "examples/getting-started/greeting.ts",
  "-o",
  crdFile,
]);
const plane = await startControlPlane({ crds: [crdFile] });
const admin = plane.kubeClient();

interface Way {
  readonly name: string;
  readonly argv: ReadonlyArray<string>;
  readonly env: Readonly<Record<string, string>>;
}

const measure = async (way: Way, index: number) => {
  const namespace = await plane.createNamespace(`mem-${index}`);
  const lease = `greetings-controller-${index}`;
  const child = spawn(process.execPath, [...way.argv], {
    env: {
      ...process.env,
      NODE_OPTIONS: "",
      ...way.env,
      KUBECONFIG: plane.kubeconfigPath,
      LEADER_ELECTION_ID: lease,
      POD_NAMESPACE: namespace,
      PROBES_ADDRESS: "127.0.0.1:0",
      METRICS_ADDRESS: "127.0.0.1:0",
    },
    stdio: ["ignore", "ignore", "inherit"],
  });
  const pid = child.pid ?? 0;
  const leasePath = `/apis/coordination.k8s.io/v1/namespaces/${namespace}/leases/${lease}`;
  for (let held = false; !held; await sleep(200))
    held = await admin.request({ method: "GET", path: leasePath }).then(
      () => true,
      () => false,
    );
  await sleep(quietMs);
  const idle = procSample(pid);
  const tasks = `/apis/getting-started.opstask.dev/v1alpha1/namespaces/${namespace}/greetings`;
  let peak = idle?.rss ?? 0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, procSample(pid)?.rss ?? 0);
  }, 100);
  const started = Date.now();
  await Promise.all(
    Array.from({ length: taskCount }, (_, n) =>
      admin.request({
        method: "POST",
        path: tasks,
        body: {
          apiVersion: "getting-started.opstask.dev/v1alpha1",
          kind: "Greeting",
          metadata: { name: `hi-${n}` },
          spec: { config: { hello: { name: `Ada ${n}` } } },
        },
      }),
    ),
  );
  for (let done = 0; done < taskCount; await sleep(250)) {
    const { body } = await admin.request({ method: "GET", path: tasks });
    const items = (body as { items: Array<{ status?: { state?: string } }> }).items;
    done = items.filter((task) => task.status?.state === "Succeeded").length;
  }
  const burstMs = Date.now() - started;
  await sleep(quietMs);
  clearInterval(sampler);
  const after = procSample(pid);
  child.kill("SIGTERM");
  await new Promise((resolve) => child.once("exit", resolve));
  return { way: way.name, idle: idle?.rss ?? Number.NaN, peak, after: after?.rss ?? Number.NaN, burstMs };
};

try {
  const entry = await bundle("bench/library-main.ts", join(work, "bundle"), true, ["opstask-source"]);
  const ways: Way[] = [
    {
      name: "documented: opstask bundle + the Deployment's Node settings",
      argv: [...tunedV8Flags, entry],
      env: { ...tunedNodeEnv },
    },
    {
      name: "plain: node main.ts (TypeScript sources, Node defaults)",
      argv: ["--conditions=opstask-source", "bench/library-main.ts"],
      env: {},
    },
  ];
  const rows = [];
  for (const [index, way] of ways.entries()) rows.push(await measure(way, index));
  console.log(
    `library controller, ${taskCount}-task burst (RSS, MiB; idle and after: ${quietMs / 1000} s quiet)`,
  );
  for (const row of rows)
    console.log(
      `${row.way}\n  idle ${mb(row.idle)}  burst peak ${mb(row.peak)}  after burst ${mb(row.after)}  (burst ${row.burstMs} ms)`,
    );
} finally {
  await plane.stop();
  rmSync(work, { recursive: true, force: true });
}
