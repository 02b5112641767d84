/**
 * `opstask dev`: the controller with everything it needs, in one command. With a cluster configured
 * (`--kubeconfig` or `KUBECONFIG`) it is `opstask controller`. Without one it starts a local
 * kube-apiserver + etcd (binaries built once from the Go module proxy and cached), installs opstask's
 * CRDs, starts a real etcd with a real etcd-backup-restore beside it and a demo Etcd `etcd-test` in
 * `default` pointing at them, runs the controller in the foreground, and tells you how to create a
 * task. Ctrl-C stops everything. `--cluster` starts the lab instead: a whole local cluster with a real
 * node, opstask deployed on it from deploy/ and a 3-member etcd with its Etcd (src/devcluster/lab).
 */
import { mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type BackupRestore, startBackupRestore } from "../devcluster/backup-restore.ts";
import { runDevCluster } from "../devcluster/dev.ts";
import { findDruid } from "../devcluster/druid/peer.ts";
import { ControllerNamespace } from "../devcluster/lab/controller.ts";
import { EtcdName, startLab } from "../devcluster/lab/start-lab.ts";
import { createReadyEtcd } from "../devcluster/ready-etcd.ts";
import { loadKubeClient } from "../kube/kubeconfig-loader.ts";
import { serveController } from "./controller-command.ts";
import { type ControllerOptions, controllerHelp, loadControllerOptions } from "./options.ts";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const crds = [
  "druid.gardener.cloud_etcdopstasks.yaml",
  "druid.gardener.cloud_etcds.yaml",
  "opstask.gardener.cloud_taskschedules.yaml",
].map((file) => join(repoRoot, "deploy", "crds", file));
const demoEtcd = { name: "etcd-test", namespace: "default" };

const say = (line: string): void => {
  process.stderr.write(`opstask dev: ${line}\n`);
};

const runLocal = async (options: ControllerOptions): Promise<void> => {
  const home = join(process.env.OPSTASK_CACHE ?? join(homedir(), ".cache", "opstask"), "dev");
  mkdirSync(home, { recursive: true });
  const kubeconfigPath = join(home, "kubeconfig");
  let backupRestore: BackupRestore | undefined;
  const stop = new AbortController();
  try {
    await runDevCluster({
      kubeconfigPath,
      crds,
      signal: stop.signal,
      onReady: async (plane) => {
        const kubeConfig = plane.makeKubeConfig();
        try {
          say("starting etcd 3.5 and etcd-backup-restore (Local store) for the demo Etcd");
          backupRestore = await startBackupRestore({ deltaSnapshotPeriod: "5m" });
          say(
            `backup-restore on 127.0.0.1:${backupRestore.port}; snapshots land in ${backupRestore.storeDir}`,
          );
        } catch (error) {
          say(
            `no etcd-backup-restore (${error instanceof Error ? error.message : String(error)}); the demo Etcd has backup enabled but nothing answers`,
          );
        }
        await createReadyEtcd(kubeConfig, {
          ...demoEtcd,
          ...(backupRestore === undefined
            ? {}
            : {
                backupPort: backupRestore.port,
                clientPort: Number(new URL(backupRestore.etcdClientUrl).port),
              }),
          storePrefix: "opstask-dev",
          message: "opstask dev demo",
        });
        const resolveRule = {
          host: `${demoEtcd.name}-client.${demoEtcd.namespace}`,
          port: "*" as const,
          address: "127.0.0.1",
        };
        say("ready. In another shell:");
        process.stderr.write(
          [
            `  export KUBECONFIG=${plane.kubeconfigPath}`,
            `  kubectl apply -f ${join(repoRoot, "examples", "tasks", "on-demand-snapshot.yaml")}`,
            `  ${join(repoRoot, "opstask")} get -w      # InProgress → Succeeded (Pending only while a task waits)`,
            "Ctrl-C stops everything.",
            "",
          ].join("\n"),
        );
        const controllerStop = new AbortController();
        stop.signal.addEventListener("abort", () => controllerStop.abort(), { once: true });
        process.once("SIGINT", () => controllerStop.abort());
        process.once("SIGTERM", () => controllerStop.abort());
        await serveController(
          kubeConfig,
          { ...options, resolve: [...options.resolve, resolveRule] },
          controllerStop.signal,
        );
        stop.abort();
      },
    });
  } finally {
    await backupRestore?.stop();
  }
};

/**
 * `--cluster`: the lab (src/devcluster/lab/start-lab.ts) — a real node with the lab images, opstask
 * deployed from deploy/ (its image built here, 2 replicas, leader election) and a 3-member etcd with
 * its Etcd — in the foreground until SIGINT/SIGTERM, which stop all of it. 1 when the lab did not start.
 * The real etcd-druid (the release scripts/testbin builds, or OPSTASK_DRUID_SOURCE / OPSTASK_DRUID_BINARY)
 * deploys that etcd from the Etcd (src/devcluster/lab/druid-etcd.ts); where druid cannot be had (no Go
 * to build it), the lab's own fixture does; which one did is printed.
 */
const runLocalCluster = async (): Promise<number> => {
  const home = join(process.env.OPSTASK_CACHE ?? join(homedir(), ".cache", "opstask"), "dev");
  mkdirSync(home, { recursive: true });
  const started = Date.now();
  let release: () => void = () => {};
  const stopped = new Promise<void>((resolve) => {
    release = resolve;
  });
  process.once("SIGINT", release);
  process.once("SIGTERM", release);
  let druid: Awaited<ReturnType<typeof findDruid>>;
  try {
    druid = await findDruid((line) => say(line));
  } catch (error) {
    say(`etcd-druid as given does not work: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  }
  say(
    druid.found
      ? `etcd fixture: etcd-druid ${druid.peer.revision.slice(0, 12)} (${druid.peer.binary}) deploys the etcd cluster from its Etcd`
      : `etcd fixture: the lab's own (${druid.reason})`,
  );
  say("building the images and starting the lab (first run: minutes; Ctrl-C stops)");
  const lab = startLab({
    kubeconfigPath: join(home, "kubeconfig"),
    log: (line) => say(line),
    ...(druid.found ? { druid: druid.peer } : {}),
  });
  let code = 0;
  try {
    const ready = await Promise.race([lab.ready, stopped.then(() => undefined)]);
    if (ready !== undefined) {
      const namespace = ready.etcd.spec.namespace;
      const opstask = join(repoRoot, "opstask");
      say(
        `ready in ${Date.now() - started} ms ${JSON.stringify(ready.timings)}: node ${ready.cluster.nodeName} (netns ${ready.cluster.netns}), Etcd ${EtcdName} in ${namespace} (${ready.etcd.spec.replicas} members deployed by ${ready.etcdFixture === "etcd-druid" ? "etcd-druid" : "the lab's own fixture"}, snapshots in ${ready.etcd.snapshotDir}), opstask in ${ControllerNamespace} (leader ${ready.leaderPod}). In another shell:`,
      );
      process.stderr.write(
        [
          `  export KUBECONFIG=${ready.cluster.kubeconfigPath}`,
          `  ${opstask} snapshot ${EtcdName} -n ${namespace} --type full --wait`,
          `  ${opstask} get -n ${namespace}`,
          "  kubectl get pods -A",
          "Ctrl-C stops everything.",
          "",
        ].join("\n"),
      );
      await stopped;
    }
  } catch (error) {
    say(`the lab did not start: ${error instanceof Error ? error.message : String(error)}`);
    code = 1;
  } finally {
    process.off("SIGINT", release);
    process.off("SIGTERM", release);
    say("stopping the lab");
    await lab.stop();
  }
  return code;
};

const devHelp = (): string =>
  [
    "Usage: opstask dev [options]",
    "",
    "Without a cluster (neither --kubeconfig nor $KUBECONFIG): starts a local kube-apiserver and etcd",
    "(binaries built once into ~/.cache/opstask/testbin), installs opstask's CRDs from deploy/crds,",
    "starts etcd with etcd-backup-restore for a demo Etcd `etcd-test` in `default`, and runs the",
    "controller on it; the kubeconfig is written to ~/.cache/opstask/dev/kubeconfig. With",
    "--kubeconfig it is `opstask controller`. Ctrl-C stops everything.",
    "",
    "  --cluster    the lab instead: the control plane plus one real node (kubelet, containerd,",
    "               kube-proxy, CoreDNS; root and scripts/system-deps node needed), opstask",
    "               deployed from deploy/ (its image built here, 2 replicas, leader election) and",
    "               a 3-member etcd with backup-restore sidecars and its Etcd `etcd-main`;",
    "               the real etcd-druid deploys that etcd from the Etcd (the release",
    "               scripts/testbin druid builds; OPSTASK_DRUID_SOURCE, druid's source tarball or",
    "               checkout, or OPSTASK_DRUID_BINARY instead)",
    "",
    "Options are the controller's:",
    "",
    ...controllerHelp().split("\n").slice(4),
  ].join("\n");

export const devCommand = async (argv: ReadonlyArray<string>): Promise<number> => {
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(`${devHelp()}\n`);
    return 0;
  }
  if (argv.includes("--cluster")) {
    const rest = argv.filter((arg) => arg !== "--cluster");
    if (rest.length > 0) {
      process.stderr.write(`opstask dev --cluster: no other option is taken yet (got ${rest.join(" ")})\n`);
      return 2;
    }
    return runLocalCluster();
  }
  const read = await loadControllerOptions(argv);
  // The task board is on in dev (loopback, a free port; its URL with the token is printed).
  const options = { ...read, ui: read.sources.ui === "default" ? "127.0.0.1:0" : read.ui };
  if (options.kubeconfig !== "") {
    const stop = new AbortController();
    process.once("SIGTERM", () => stop.abort());
    process.once("SIGINT", () => stop.abort());
    await serveController(await loadKubeClient(options.kubeconfig), options, stop.signal);
    return 0;
  }
  await runLocal({
    ...options,
    logFormat: options.sources.logFormat === "default" ? "text" : options.logFormat,
  });
  return 0;
};
