/**
 * The controller's memory against the size and the number of its tasks (docs/security.md): the
 * controller process as deployed (production bundle, the Deployment's NODE_OPTIONS, deploy/'s RBAC) on
 * a local control plane takes over `count` tasks of `size` bytes each, created before it starts (its
 * first LIST reads them all), and runs each to its end (Rejected: the bulk sits in a compaction image
 * no policy allows, or the task is over --max-task-bytes). Printed per case: the controller's RSS once
 * every task is settled, its peak RSS (VmHWM), and how long the takeover took. `max` is the largest
 * task the apiserver stores (etcd's request limit), found by trying.
 *
 *   scripts/bench task-size-memory [--sizes 1000,60000,100000,max] [--counts 100,300,1000]
 *                                  [--max-total-mb 500]  (cases above this many MB of tasks are skipped)
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { CoreV1Api, CustomObjectsApi } from "@kubernetes/client-node";
import { startControlPlane } from "../src/devcluster/control-plane.ts";
import { bulkyTask, createLargestTask, taskStates, tasks } from "../test/support/bulky-tasks.ts";
import { repoRoot } from "../test/support/cluster.ts";
import { installOpstask, startOpstask } from "../test/support/opstask-process.ts";
import { procSample } from "../test/support/proc-stats.ts";
import { argValue, intArg } from "./args.ts";

const sizes = (argValue("sizes") ?? "1000,60000,100000,max").split(",");
const counts = (argValue("counts") ?? "100,300,1000").split(",").map(Number);
const maxTotalMb = intArg("max-total-mb", 500);

const crdDir = join(repoRoot, "deploy", "crds");
const plane = await startControlPlane({
  crds: readdirSync(crdDir)
    .filter((file) => file.endsWith(".yaml"))
    .map((file) => join(crdDir, file)),
  // Room for the revisions of many large objects (each write stores the object again).
  etcdArgs: ["--quota-backend-bytes=8589934592"],
});
const mb = (bytes: number) => (bytes / 1e6).toFixed(1);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

try {
  const kc = plane.makeKubeConfig();
  const api = kc.makeApiClient(CustomObjectsApi);
  const core = kc.makeApiClient(CoreV1Api);
  await installOpstask(plane);
  let serial = 0;
  const namespaceFor = async () => {
    const name = `bench-${serial++}`;
    await core.createNamespace({ body: { metadata: { name } } });
    return name;
  };
  let largest = 0;
  if (sizes.includes("max")) {
    const probe = await namespaceFor();
    largest = (await createLargestTask(api, probe, "largest")).stored;
    console.log(`largest task the apiserver stores: ${largest} bytes of JSON`);
  }
  console.log("| task size | tasks | in all | RSS, all settled | peak RSS | takeover |");
  console.log("|---:|---:|---:|---:|---:|---:|");
  for (const sizeArg of sizes) {
    const size = sizeArg === "max" ? largest : Number(sizeArg);
    for (const count of counts) {
      if ((size * count) / 1e6 > maxTotalMb) {
        console.log(
          `| ${size.toLocaleString("en-US")} B | ${count} | ${mb(size * count)} MB | skipped (--max-total-mb) | | |`,
        );
        continue;
      }
      const namespace = await namespaceFor();
      let next = 0;
      const creator = async () => {
        while (next < count) {
          const name = `t-${next++}`;
          await api.createNamespacedCustomObject({
            ...tasks,
            namespace,
            body: bulkyTask(namespace, name, size),
          });
        }
      };
      await Promise.all(Array.from({ length: 6 }, creator));
      const started = Date.now();
      const opstask = await startOpstask(plane, { namespaces: [namespace] });
      try {
        for (;;) {
          const exited = opstask.process.exited();
          if (exited !== undefined)
            throw new Error(
              `the controller exited (${exited.code ?? exited.signal}):\n${opstask.process.tail(20)}`,
            );
          const states = await taskStates(plane, namespace);
          if ([...states.values()].filter((state) => state === "Rejected").length === count) break;
          await sleep(500);
        }
        const seconds = (Date.now() - started) / 1000;
        await sleep(3_000);
        const sample = procSample(opstask.pid);
        console.log(
          `| ${size.toLocaleString("en-US")} B | ${count} | ${mb(size * count)} MB | ${mb(sample?.rss ?? 0)} MB | ${mb(sample?.peakRss ?? 0)} MB | ${seconds.toFixed(1)} s |`,
        );
      } finally {
        await opstask.stop();
      }
    }
  }
} finally {
  await plane.stop();
}
