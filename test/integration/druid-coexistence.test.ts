/**
 * opstask beside the real etcd-druid (≥ v0.34 runs an EtcdOpsTask controller that cannot be turned
 * off; by default the release scripts/testbin builds) on one kube-apiserver, with deploy/coexistence's
 * ValidatingAdmissionPolicy:
 *
 * - each task gets exactly one snapshot POST (opstask's); every write druid tries on a task is refused;
 * - druid keeps running (no exit, no restart) and its Etcd controller keeps working;
 * - druid's Etcd controller may create the presync snapshot task it makes before it hibernates an Etcd
 *   (v0.38.1; since druid #1300), which opstask runs; druid then scales the Etcd's StatefulSet to 0;
 * - opstask deletes the tasks after their TTL;
 * - and without the policy, opstask notices druid on its task and says so (a Warning Event naming
 *   druid's field manager, and a log line) instead of fighting over it.
 *
 * Runs where druid is built (`scripts/testbin druid`) or given (OPSTASK_DRUID_BINARY or
 * OPSTASK_DRUID_SOURCE); vitest.config.ts leaves this file out otherwise and says so.
 */
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ApiException,
  AppsV1Api,
  CustomObjectsApi,
  EventsV1Api,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { createEtcds, memberLease, standInDruidSettings } from "../../bench/druid-support.ts";
import { Finalizer } from "../../src/etcd/api/etcdopstask.ts";
import { Mode, type StandIn, startStandIn } from "../etcd/support/stand-in.ts";
import { auditLog } from "../support/audit-log.ts";
import { createTestNamespace, repoRoot, useControlPlane } from "../support/cluster.ts";
import { findDruid } from "../support/druid-peer.ts";
import {
  applyObjects,
  druidCrdFiles,
  druidNamespace,
  druidServiceAccount,
  druidUser,
  installDruid,
  type RunningDruid,
  startDruid,
} from "../support/druid-process.ts";
import { installOpstask, type RunningOpstask, startOpstask } from "../support/opstask-process.ts";

const lookup = await findDruid((line) => process.stderr.write(`${line}\n`));
if (!lookup.found) throw new Error(lookup.reason);
const peer = lookup.peer;
const audit = auditLog(mkdtempSync(join(tmpdir(), "opstask-coexistence-")), [druidUser]);
const cluster = useControlPlane({ crds: druidCrdFiles(peer), apiserverArgs: audit.apiserverArgs });

const tasks = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcdopstasks" };
const etcds = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcds" };
const guarded = ["task-0", "task-1", "task-2", "task-3", "task-4"];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const waitFor = async <A>(
  what: string,
  probe: () => Promise<A | undefined>,
  timeoutMs: number,
): Promise<A> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(250);
  }
};

const coexistenceObjects = (): KubernetesObject[] => {
  const dir = join(repoRoot, "deploy", "coexistence");
  return readdirSync(dir)
    .filter((file) => file.endsWith(".yaml") && file !== "kustomization.yaml")
    .flatMap((file) => parseAllDocuments(readFileSync(join(dir, file), "utf8")).map((d) => d.toJS()))
    .filter((object): object is KubernetesObject => object !== null);
};

describe("opstask beside etcd-druid with deploy/coexistence", () => {
  let kc: KubeConfig;
  let druidKc: KubeConfig;
  let api: CustomObjectsApi;
  let namespace: string;
  let standIn: StandIn;
  let druid: RunningDruid;
  let opstask: RunningOpstask;

  const task = (name: string, etcdName: string, ttl: number) => ({
    apiVersion: "druid.gardener.cloud/v1alpha1",
    kind: "EtcdOpsTask",
    metadata: { name, namespace },
    spec: { etcdName, ttlSecondsAfterFinished: ttl, config: { onDemandSnapshot: { type: "full" } } },
  });
  /** Whether the apiserver lets druid's ServiceAccount create a task (dry run: nothing is kept). */
  const druidMayWrite = async (): Promise<boolean> => {
    try {
      await druidKc.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
        ...tasks,
        namespace,
        body: task("dry-run", "etcd-none", 60),
        dryRun: "All",
      });
      return true;
    } catch (error) {
      if (error instanceof ApiException && error.code === 403) return false;
      throw error;
    }
  };
  /** Every write druid's ServiceAccount tried on a task since `mark`, whatever its answer. */
  const druidTaskWritesSince = (mark: number) =>
    audit
      .since(mark)
      .filter(
        (r) =>
          r.user === druidUser &&
          r.resource.startsWith("etcdopstasks") &&
          !["get", "list", "watch"].includes(r.verb),
      );
  const postsTo = (etcdName: string) =>
    standIn.requests.filter((r) => r.method === "POST" && r.host?.startsWith(`${etcdName}-client.`)).length;
  const foreignWriterEvents = async () =>
    (await kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace })).items.filter(
      (event) => event.reason === "ForeignWriter",
    );

  beforeAll(async () => {
    const plane = cluster();
    kc = plane.makeKubeConfig();
    api = kc.makeApiClient(CustomObjectsApi);
    await installOpstask(plane);
    await installDruid(plane, peer);
    await applyObjects(kc, coexistenceObjects());
    namespace = await createTestNamespace(kc, "coexist");
    druidKc = plane.kubeConfigForToken(
      await plane.serviceAccountToken(druidNamespace, druidServiceAccount),
      druidServiceAccount,
    );
    await waitFor(
      "the policy to refuse druid's writes",
      async () => ((await druidMayWrite()) ? undefined : true),
      30_000,
    );
    standIn = await startStandIn({ mode: Mode.delay(300, Mode.ok("{}")) });
    const etcdNames = [...guarded, "unguarded", "managed"].map((name) => `etcd-${name}`);
    await createEtcds(
      kc,
      namespace,
      etcdNames.filter((name) => name !== "etcd-managed"),
      standIn.port,
      4,
    );
    druid = await startDruid(plane, peer, standInDruidSettings(standIn.port));
    opstask = await startOpstask(plane, {
      namespaces: [namespace],
      resolve: etcdNames.map((etcd) => `${etcd}-client.${namespace}:*:127.0.0.1`),
    });
  }, 180_000);

  afterAll(async () => {
    await opstask?.stop();
    await druid?.stop();
    await standIn?.close();
  });

  it("each task gets exactly one POST, druid's writes to tasks are all refused, and opstask deletes them after their TTL", async () => {
    const mark = audit.mark();
    for (const name of guarded)
      await api.createNamespacedCustomObject({ ...tasks, namespace, body: task(name, `etcd-${name}`, 5) });
    for (const name of guarded)
      await waitFor(
        `${name} to be deleted after its TTL`,
        async () => {
          try {
            await api.getNamespacedCustomObject({ ...tasks, namespace, name });
            return undefined;
          } catch (error) {
            return error instanceof ApiException && error.code === 404 ? true : undefined;
          }
        },
        60_000,
      );
    // druid retries a refused write with its backoff (≤ its 15 s requeue interval): give it time to try.
    await sleep(16_000);
    expect(guarded.map((name) => postsTo(`etcd-${name}`))).toEqual(guarded.map(() => 1));
    const druidTaskWrites = druidTaskWritesSince(mark);
    // Refused by the policy (403); some fail earlier, on a stale resourceVersion (409) or a task
    // already gone (404). None is applied.
    expect(druidTaskWrites.some((r) => r.code === 403)).toBe(true);
    expect(druidTaskWrites.filter((r) => r.code >= 200 && r.code < 300)).toEqual([]);
    expect(await foreignWriterEvents()).toEqual([]);
  }, 120_000);

  it("druid keeps running and its Etcd controller keeps working", async () => {
    expect(druid.process.exited()).toBeUndefined();
    // An Etcd druid fully manages: its finalizer and its StatefulSet appear. Its backup store and
    // sidecar (the stand-in) are for the next test; its member's Lease, renewed as a sidecar would,
    // makes druid's status check write it Ready.
    await KubernetesObjectApi.makeApiClient(kc).create(memberLease(namespace, "etcd-managed"));
    await api.createNamespacedCustomObject({
      ...etcds,
      namespace,
      body: {
        apiVersion: "druid.gardener.cloud/v1alpha1",
        kind: "Etcd",
        metadata: { name: "etcd-managed", namespace },
        spec: {
          replicas: 1,
          labels: { app: "etcd-managed" },
          etcd: {},
          backup: { port: standIn.port, store: { prefix: "etcd-managed" } },
        },
      },
    });
    await waitFor(
      "druid's StatefulSet for etcd-managed",
      () => kc.makeApiClient(AppsV1Api).readNamespacedStatefulSet({ name: "etcd-managed", namespace }),
      60_000,
    );
    const managed = (await api.getNamespacedCustomObject({ ...etcds, namespace, name: "etcd-managed" })) as {
      metadata: { finalizers?: string[] };
    };
    expect(managed.metadata.finalizers).toContain("druid.gardener.cloud/etcd-druid");
    expect(druid.process.exited()).toBeUndefined();
    expect(druid.lines().filter((line) => /panic|"level":"(fatal|dpanic)"/.test(line))).toEqual([]);
  }, 90_000);

  it("druid's Etcd controller creates its presync snapshot task when it hibernates an Etcd; opstask runs it, and then druid scales the StatefulSet to 0", async () => {
    const mark = audit.mark();
    await waitFor(
      "druid to write etcd-managed Ready",
      async () => {
        const etcd = (await api.getNamespacedCustomObject({ ...etcds, namespace, name: "etcd-managed" })) as {
          status?: { conditions?: { type?: string; status?: string }[] };
        };
        return etcd.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")
          ? true
          : undefined;
      },
      60_000,
    );
    // Hibernation as Gardener asks for it: no replicas, and the reconcile annotation (druid's chart
    // leaves spec auto-reconcile off).
    await api.patchNamespacedCustomObject(
      {
        ...etcds,
        namespace,
        name: "etcd-managed",
        body: {
          metadata: { annotations: { "gardener.cloud/operation": "reconcile" } },
          spec: { replicas: 0 },
        },
      },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    const presync = await waitFor(
      "druid's presync task to succeed",
      async () => {
        const task = (await api.getNamespacedCustomObject({
          ...tasks,
          namespace,
          name: "presync-snapshot-hibernation-0",
        })) as {
          metadata?: { ownerReferences?: { kind?: string; name?: string; controller?: boolean }[] };
          status?: { state?: string };
        };
        return task.status?.state === "Succeeded" ? task : undefined;
      },
      60_000,
    );
    expect(presync.metadata?.ownerReferences).toMatchObject([
      { kind: "Etcd", name: "etcd-managed", controller: true },
    ]);
    expect(postsTo("etcd-managed")).toBe(1);
    await waitFor(
      "druid to scale etcd-managed's StatefulSet to 0",
      async () => {
        const set = await kc
          .makeApiClient(AppsV1Api)
          .readNamespacedStatefulSet({ name: "etcd-managed", namespace });
        return set.spec?.replicas === 0 ? true : undefined;
      },
      60_000,
    );
    // druid's only applied write to a task was that create; the policy refused the rest.
    const applied = druidTaskWritesSince(mark).filter((r) => r.code >= 200 && r.code < 300);
    expect(applied.map((r) => `${r.verb} ${r.resource}`)).toEqual(["create etcdopstasks"]);
  }, 150_000);

  it("without the policy, opstask notices druid on its task and says so instead of fighting", async () => {
    const binding = coexistenceObjects().find((object) => object.kind === "ValidatingAdmissionPolicyBinding");
    await kc.makeApiClient(CustomObjectsApi).deleteClusterCustomObject({
      group: "admissionregistration.k8s.io",
      version: "v1",
      plural: "validatingadmissionpolicybindings",
      name: binding?.metadata?.name ?? "",
    });
    await waitFor(
      "druid's writes to be allowed again",
      async () => ((await druidMayWrite()) ? true : undefined),
      30_000,
    );
    await api.createNamespacedCustomObject({
      ...tasks,
      namespace,
      body: task("unguarded", "etcd-unguarded", 3600),
    });
    const events = await waitFor(
      "a ForeignWriter Event",
      async () => {
        const found = await foreignWriterEvents();
        return found.length > 0 ? found : undefined;
      },
      60_000,
    );
    expect(events.map((event) => event.regarding?.name)).toContain("unguarded");
    expect(events.every((event) => event.type === "Warning" && event.note?.includes('"etcd-druid"'))).toBe(
      true,
    );
    expect(opstask.lines().some((line) => line.includes("another controller writes this task"))).toBe(true);
    const unguarded = (await api.getNamespacedCustomObject({ ...tasks, namespace, name: "unguarded" })) as {
      metadata: { finalizers?: string[] };
    };
    expect(unguarded.metadata.finalizers).toEqual([Finalizer]);
    expect(druid.process.exited()).toBeUndefined();
  }, 90_000);
});
