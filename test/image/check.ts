/**
 * The image check: the built image, run with podman as deploy/deployment.yaml runs it, against a real
 * local kube-apiserver holding exactly deploy/'s objects, authenticated only by a TokenRequest token of
 * deploy/'s ServiceAccount. It passes when the container becomes ready, takes the leader Lease, runs
 * a full on-demand snapshot task through a real etcd-backup-restore to Succeeded (a new full snapshot
 * in the store), made no request the API server forbade, and exits 0 on SIGTERM.
 *
 *   node test/image/check.ts --image ID [--break-rbac etcdopstasks/status:patch]
 *
 * `--break-rbac` removes one verb from deploy/clusterrole.yaml before applying it; the check must then
 * fail (scripts/image-check shows both). Exit 0 when the check passed, 1 when not.
 */
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  RbacAuthorizationV1Api,
  type V1Deployment,
} from "@kubernetes/client-node";
import type { TaskStatus } from "../../src/api/status.ts";
import { type BackupRestore, startBackupRestore } from "../../src/devcluster/backup-restore.ts";
import { type ControlPlane, startControlPlane } from "../../src/devcluster/control-plane.ts";
import { freePorts } from "../../src/devcluster/ports.ts";
import { createReadyEtcd } from "../../src/devcluster/ready-etcd.ts";
import { applyManifests, deployCrdFiles, deployObjects } from "../support/deploy-manifests.ts";
import { type RbacBreak, withBrokenRbac } from "./deploy-manifests.ts";
import { podmanGlobalArgs, podmanRunArgs } from "./pod-as-podman.ts";

const run = promisify(execFile);
const tasks = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcdopstasks" };

export interface ImageCheckOptions {
  /** An image ID or reference podman can run. */
  readonly image: string;
  readonly breakRbac?: RbacBreak;
  /** Bound for the task to succeed once the controller is ready (default 60 s). */
  readonly taskTimeoutMs?: number;
  readonly log?: (line: string) => void;
}

export type ImageCheckResult =
  | { readonly ok: true; readonly steps: ReadonlyArray<string> }
  | { readonly ok: false; readonly reason: string; readonly controllerLog: string };

class CheckFailed extends Error {}

const podman = async (args: readonly string[], timeout = 60_000): Promise<string> =>
  (await run("podman", [...podmanGlobalArgs, ...args], { timeout, maxBuffer: 32 * 1024 * 1024 })).stdout;

const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

/** HTTP GET on loopback; undefined while nothing answers. */
const get = async (url: string): Promise<{ status: number; body: string } | undefined> => {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    return { status: response.status, body: await response.text() };
  } catch {
    return undefined;
  }
};

/**
 * GET over HTTPS with a bearer token, as a scraper reads the controller's secure metrics (its
 * certificate is self-signed at start, so it is not verified here); undefined while nothing answers.
 */
const getSecure = (url: string, token: string): Promise<{ status: number; body: string } | undefined> =>
  new Promise((resolve) => {
    const req = request(
      url,
      { headers: { Authorization: `Bearer ${token}` }, rejectUnauthorized: false, timeout: 2_000 },
      (response) => {
        let body = "";
        response.setEncoding("utf8");
        response.on("data", (chunk: string) => {
          body += chunk;
        });
        response.on("end", () => resolve({ status: response.statusCode ?? 0, body }));
        response.on("error", () => resolve(undefined));
      },
    );
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(undefined));
    req.end();
  });

/** `opstask_api_requests_total` lines with code 403, from the controller's /metrics. */
const forbiddenRequests = (metrics: string): string[] =>
  metrics
    .split("\n")
    .filter((line) => line.startsWith("opstask_api_requests_total") && line.includes('code="403"'));

export const runImageCheck = async (options: ImageCheckOptions): Promise<ImageCheckResult> => {
  const log = options.log ?? ((line: string) => process.stderr.write(`image-check: ${line}\n`));
  const steps: string[] = [];
  const step = (line: string): void => {
    steps.push(line);
    log(line);
  };
  const containerName = `opstask-image-check-${randomBytes(4).toString("hex")}`;
  const scratch = mkdtempSync(join(tmpdir(), "opstask-image-check-"));
  let plane: ControlPlane | undefined;
  let backupRestore: BackupRestore | undefined;
  let started = false;
  const containerLog = async (): Promise<string> =>
    started ? await podman(["logs", containerName]).catch((error: unknown) => String(error)) : "";
  try {
    plane = await startControlPlane({ crds: [...deployCrdFiles], build: false, log: () => {} });
    const admin = plane.makeKubeConfig();
    const loaded = deployObjects();
    const manifests = options.breakRbac === undefined ? loaded : withBrokenRbac(loaded, options.breakRbac);
    await applyManifests(admin, manifests, "opstask-image-check");
    const deployment = manifests.find((m) => m.kind === "Deployment") as V1Deployment | undefined;
    const namespace = deployment?.metadata?.namespace;
    const serviceAccount = deployment?.spec?.template.spec?.serviceAccountName;
    if (deployment === undefined || namespace === undefined || serviceAccount === undefined)
      throw new CheckFailed("deploy/ has no Deployment with a namespace and a serviceAccountName");
    step(
      `applied ${manifests.length} deploy/ objects${options.breakRbac === undefined ? "" : ` (ClusterRole without ${options.breakRbac.verb} on ${options.breakRbac.resource})`}`,
    );

    // What the kubelet projects into the pod: a TokenRequest token, the cluster CA, the namespace.
    const token = await plane.serviceAccountToken(namespace, serviceAccount, {
      create: false,
      expirationSeconds: 3600,
    });
    const serviceAccountDir = join(scratch, "serviceaccount");
    mkdirSync(serviceAccountDir, { mode: 0o755 });
    for (const [file, content] of [
      ["token", token],
      ["ca.crt", plane.caPem],
      ["namespace", namespace],
    ] as const)
      writeFileSync(join(serviceAccountDir, file), content, { flag: "w", mode: 0o644 });
    chmodSync(scratch, 0o755);
    step(`TokenRequest token for ${namespace}/${serviceAccount}`);

    // A scraper as deploy/ expects one: a ServiceAccount bound to opstask-metrics-reader, reading the
    // secure metrics with its token (the controller asks the apiserver: TokenReview, SubjectAccessReview).
    const scraper = "image-check-scraper";
    await admin.makeApiClient(RbacAuthorizationV1Api).createClusterRoleBinding({
      body: {
        metadata: { name: scraper },
        roleRef: {
          apiGroup: "rbac.authorization.k8s.io",
          kind: "ClusterRole",
          name: "opstask-metrics-reader",
        },
        subjects: [{ kind: "ServiceAccount", name: scraper, namespace }],
      },
    });
    const scraperToken = await plane.serviceAccountToken(namespace, scraper, { expirationSeconds: 3600 });

    backupRestore = await startBackupRestore({ deltaSnapshotPeriod: "1h", build: false });
    const taskNamespace = `image-check-${randomBytes(3).toString("hex")}`;
    await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: taskNamespace } } });
    const etcdName = "etcd-image-check";
    await createReadyEtcd(admin, {
      name: etcdName,
      namespace: taskNamespace,
      backupPort: backupRestore.port,
    });
    step(`etcd-backup-restore on port ${backupRestore.port}; Etcd ${taskNamespace}/${etcdName} Ready`);

    const [metricsPort, probePort] = await freePorts(2);
    const server = new URL(plane.server);
    const podmanRun = podmanRunArgs({
      deployment,
      image: options.image,
      containerName,
      serviceAccountDir,
      apiserver: { host: server.hostname, port: Number(server.port) },
      metricsAddress: `127.0.0.1:${metricsPort}`,
      probeAddress: `127.0.0.1:${probePort}`,
      extraArgs: [`--resolve=${etcdName}-client.${taskNamespace}:*:127.0.0.1`],
    });
    if (!podmanRun.ok) throw new CheckFailed(`deploy/deployment.yaml: ${podmanRun.reason}`);
    await podman(["run", "--detach", ...podmanRun.args]);
    started = true;
    step(`container ${containerName} started`);

    const metrics = `https://127.0.0.1:${metricsPort}/metrics`;
    const running = async (): Promise<void> => {
      const state = (await podman(["inspect", "--format", "{{.State.Status}}", containerName])).trim();
      if (state !== "running") throw new CheckFailed(`the container is ${state}`);
      const forbidden = forbiddenRequests((await getSecure(metrics, scraperToken))?.body ?? "");
      if (forbidden.length > 0)
        throw new CheckFailed(`the API server forbade requests: ${forbidden.join("; ")}`);
    };
    for (let waited = 0; (await get(`http://127.0.0.1:${probePort}/readyz`))?.status !== 200; waited += 250) {
      await running();
      if (waited > 60_000) throw new CheckFailed("not ready (/readyz) 60 s after start");
      await sleep(250);
    }
    // Ready includes a healthy standby: the Lease may be taken a moment later.
    const leases = admin.makeApiClient(CoordinationV1Api);
    const holder = async (): Promise<string | undefined> =>
      (await leases.readNamespacedLease({ namespace, name: "opstask-controller" }).catch(() => undefined))
        ?.spec?.holderIdentity ?? undefined;
    for (let waited = 0; !(await holder()); waited += 250) {
      await running();
      if (waited > 30_000) throw new CheckFailed("ready, but nobody holds the leader Lease 30 s later");
      await sleep(250);
    }
    step(`ready; leader Lease held by ${await holder()}`);

    // A new revision first: etcd-backup-restore skips a full snapshot when nothing changed since its
    // last one (it answers with the old snapshot), so without it "a new file appeared" races the
    // initial snapshot taken at start-up.
    await backupRestore.putKeys(1);
    const before = await backupRestore.listSnapshots();
    const api = admin.makeApiClient(CustomObjectsApi);
    await api.createNamespacedCustomObject({
      ...tasks,
      namespace: taskNamespace,
      body: {
        apiVersion: "druid.gardener.cloud/v1alpha1",
        kind: "EtcdOpsTask",
        metadata: { name: "full", namespace: taskNamespace },
        spec: { etcdName, ttlSecondsAfterFinished: 3600, config: { onDemandSnapshot: { type: "full" } } },
      },
    });
    const deadline = Date.now() + (options.taskTimeoutMs ?? 60_000);
    for (;;) {
      await running();
      const task = (await api.getNamespacedCustomObject({
        ...tasks,
        namespace: taskNamespace,
        name: "full",
      })) as {
        status?: TaskStatus;
      };
      const state = task.status?.state;
      if (state === "Succeeded") break;
      if (state === "Failed" || state === "Rejected")
        throw new CheckFailed(
          `the task ended ${state}: ${JSON.stringify(task.status?.lastErrors ?? task.status)}`,
        );
      if (Date.now() > deadline)
        throw new CheckFailed(`the task is not Succeeded in time: ${JSON.stringify(task.status ?? {})}`);
      await sleep(250);
    }
    const added = (await backupRestore.listSnapshots()).filter((file) => !before.includes(file));
    if (!added.some((file) => /Full-.*\.gz$/.test(file)))
      throw new CheckFailed(`the task Succeeded but no full snapshot appeared: ${JSON.stringify(added)}`);
    step(`task Succeeded through the container; new snapshot ${added.join(", ")}`);
    await running();

    await podman(["stop", "--time", "30", containerName], 60_000);
    const exitCode = (await podman(["inspect", "--format", "{{.State.ExitCode}}", containerName])).trim();
    if (exitCode !== "0") throw new CheckFailed(`exit code ${exitCode} after SIGTERM (expected 0)`);
    step("SIGTERM: exit code 0");
    return { ok: true, steps };
  } catch (error) {
    const reason = error instanceof CheckFailed ? error.message : `the check could not run: ${String(error)}`;
    return { ok: false, reason, controllerLog: await containerLog() };
  } finally {
    if (started) await podman(["rm", "--force", "--time", "5", containerName]).catch(() => "");
    await backupRestore?.stop();
    await plane?.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
};

const parseBreak = (raw: string): RbacBreak | undefined => {
  const match = /^([\w./-]+):(\w+)$/.exec(raw);
  return match?.[1] === undefined || match[2] === undefined
    ? undefined
    : { resource: match[1], verb: match[2] };
};

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const image = args[args.indexOf("--image") + 1];
  const breakAt = args.indexOf("--break-rbac");
  const breakRbac = breakAt === -1 ? undefined : parseBreak(args[breakAt + 1] ?? "");
  if (args.indexOf("--image") === -1 || image === undefined || (breakAt !== -1 && breakRbac === undefined)) {
    process.stderr.write("usage: node test/image/check.ts --image ID [--break-rbac RESOURCE:VERB]\n");
    process.exit(2);
  }
  const result = await runImageCheck({ image, ...(breakRbac === undefined ? {} : { breakRbac }) });
  if (result.ok) process.stdout.write("image-check: passed\n");
  else {
    const tail = result.controllerLog.trimEnd().split("\n").slice(-20).join("\n");
    process.stdout.write(
      `image-check: FAILED: ${result.reason}\n--- controller log (last 20 lines) ---\n${tail}\n`,
    );
  }
  process.exitCode = result.ok ? 0 : 1;
}
