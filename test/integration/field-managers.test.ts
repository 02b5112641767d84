/**
 * Every write names its field manager (what `kubectl get --show-managed-fields` shows): the
 * controller's as `opstask` (finalizer, status, Events, the Lease, a handler's Job), the task CLI's as
 * `opstask-cli` (the task it creates), against a real kube-apiserver. Without a field manager the
 * apiserver records the User-Agent's program, `unknown` for opstask's client.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { BatchV1Api, CoordinationV1Api, CustomObjectsApi, EventsV1Api } from "@kubernetes/client-node";
import { Duration, Effect, Exit, Scope } from "effect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeOpstaskCommands } from "../../src/cli/task/index.ts";
import { makeKubernetesJobs } from "../../src/etcd/on-demand-snapshot-compaction/jobs-kubernetes.ts";
import { runLeaderElection } from "../../src/runtime/leader-election.ts";
import { createTestNamespace, repoRoot, useControlPlane } from "../support/cluster.ts";
import { type RunningController, scriptedHandlers, startController } from "../support/controller.ts";
import { captureTaskIo } from "../support/task-io.ts";
import { waitFor } from "../support/wait.ts";

const crds = readdirSync(join(repoRoot, "deploy", "crds"))
  .filter((file) => file.endsWith(".yaml"))
  .map((file) => join(repoRoot, "deploy", "crds", file));
const cluster = useControlPlane({ crds });

interface ManagedFieldsEntry {
  readonly manager?: string;
  readonly operation?: string;
  readonly subresource?: string;
}

/** `manager/operation[/subresource]` of each managedFields entry, sorted. */
const managersOf = (object: unknown): ReadonlyArray<string> => {
  const entries = (object as { metadata?: { managedFields?: ReadonlyArray<ManagedFieldsEntry> } }).metadata
    ?.managedFields;
  return (entries ?? [])
    .map((entry) =>
      [entry.manager ?? "", entry.operation ?? "", ...(entry.subresource ? [entry.subresource] : [])].join(
        "/",
      ),
    )
    .sort();
};

describe("field managers on every write", () => {
  let namespace: string;
  let controller: RunningController | undefined;

  beforeAll(async () => {
    const kc = cluster().makeKubeConfig();
    namespace = await createTestNamespace(kc, "managers");
    controller = await startController(kc, scriptedHandlers().registry, {}, namespace);
  });
  afterAll(async () => {
    await controller?.stop();
  });

  it("a task created by the CLI and run by the controller names opstask-cli and opstask", async () => {
    const { io, captured } = captureTaskIo();
    const commands = makeOpstaskCommands(() => io);
    const code = await commands.snapshot?.([
      "etcd-m",
      "--type",
      "full",
      "--name",
      "managed",
      "--wait",
      "--kubeconfig",
      cluster().kubeconfigPath,
      "-n",
      namespace,
    ]);
    expect({ code, err: captured.err }).toEqual({ code: 0, err: "" });
    expect(captured.out).toContain("managed Succeeded");

    const kc = cluster().makeKubeConfig();
    const task = await kc.makeApiClient(CustomObjectsApi).getNamespacedCustomObject({
      group: "druid.gardener.cloud",
      version: "v1alpha1",
      plural: "etcdopstasks",
      namespace,
      name: "managed",
    });
    // Create by the CLI; the finalizer and the status by the controller.
    expect(managersOf(task)).toEqual(["opstask-cli/Update", "opstask/Update", "opstask/Update/status"]);

    const events = await waitFor("the task's Events", async () => {
      const list = await kc
        .makeApiClient(EventsV1Api)
        .listNamespacedEvent({ namespace, fieldSelector: "regarding.name=managed" });
      return list.items.length >= 2 ? list.items : undefined;
    });
    for (const event of events)
      expect({ reason: event.reason, managers: managersOf(event) }).toEqual({
        reason: event.reason,
        managers: ["opstask/Update"],
      });
  });

  it("the controller's Lease and a handler's Job name opstask", async () => {
    const kc = cluster().makeKubeConfig();
    const scope = Scope.makeUnsafe();
    try {
      await Effect.runPromise(
        runLeaderElection({
          kubeConfig: kc,
          namespace,
          name: "opstask-managers",
          identity: "test-a",
          leaseDuration: Duration.seconds(2),
          renewDeadline: Duration.millis(1500),
          retryPeriod: Duration.millis(300),
        }).pipe(
          Effect.flatMap((election) => election.leading),
          Scope.provide(scope),
        ),
      );
      // Held long enough for at least one renewal (a PATCH… or PUT) besides the creation.
      const lease = await waitFor("a renewal", async () => {
        const read = await kc
          .makeApiClient(CoordinationV1Api)
          .readNamespacedLease({ namespace, name: "opstask-managers" });
        const at = (time: unknown) => Date.parse(String(time));
        return at(read.spec?.renewTime) > at(read.spec?.acquireTime) ? read : undefined;
      });
      expect(managersOf(lease)).toEqual(["opstask/Update"]);
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void));
    }

    const jobs = makeKubernetesJobs({ kubeConfig: kc });
    await Effect.runPromise(
      jobs.create({
        metadata: { name: "managed-job", namespace },
        spec: {
          template: {
            spec: { restartPolicy: "Never", containers: [{ name: "c", image: "example.invalid/none:1" }] },
          },
        },
      }),
    );
    const job = await kc.makeApiClient(BatchV1Api).readNamespacedJob({ namespace, name: "managed-job" });
    expect(managersOf(job).every((manager) => manager.startsWith("opstask/"))).toBe(true);
    expect(managersOf(job)).toContain("opstask/Update");
  });
});
