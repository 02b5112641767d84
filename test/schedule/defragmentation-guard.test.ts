/**
 * The EtcdOpsTask `defragmentation` guard: a scheduled defragmentation runs only when some voting
 * member would reclaim enough, read from each member's `/v3/maintenance/status` (dbSize, dbSizeInUse)
 * through the maintenance handler's own endpoints and checks. The members are a scripted stand-in for
 * etcd's JSON gateway (test/etcd/on-demand-maintenance/fake-gateway.ts).
 */
import { Effect, Layer, Result } from "effect";
import { afterEach, describe, expect, it } from "vitest";
import { nodeEtcdGatewayLayer } from "../../src/etcd/etcd-client.ts";
import { memoryObjectReaderLayer } from "../../src/etcd/object-reader-memory.ts";
import { defragmentationGuard } from "../../src/etcd/schedule/defragmentation-guard.ts";
import {
  defragmentationVerdict,
  parseDefragmentationRule,
} from "../../src/etcd/schedule/defragmentation-rule.ts";
import { runObject } from "../../src/schedule/run-object.ts";
import type { TaskSchedule } from "../../src/schedule/schedule-spec.ts";
import { type FakeGateway, ok, startFakeGateway } from "../etcd/on-demand-maintenance/fake-gateway.ts";
import { etcdName, etcdObject, host, namespace, world } from "../etcd/on-demand-maintenance/support.ts";

const MiB = 1024 ** 2;
const memberHost = (index: number) => `test-etcd-${index}.test-etcd-peer.ns.svc`;

let fake: FakeGateway | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

const scheduleWith = (config: Record<string, unknown>, parameters: Record<string, string>): TaskSchedule => ({
  metadata: {
    name: "defrag",
    namespace,
    uid: "schedule-uid",
    resourceVersion: "1",
    generation: 1,
    creationTimestamp: "2026-01-01T00:00:00Z",
  },
  spec: {
    taskKind: { apiVersion: "druid.gardener.cloud/v1alpha1", kind: "EtcdOpsTask" },
    taskTemplate: { spec: { etcdName, config } },
    schedule: "0 3 * * *",
    suspend: false,
    concurrencyPolicy: "Forbid",
    successfulRunsHistoryLimit: 3,
    failedRunsHistoryLimit: 1,
    guard: { name: "defragmentation", parameters },
  },
});

/** Asks the guard about a three-member etcd whose members report `sizes[i]` = [dbSize, dbSizeInUse]. */
const ask = async (
  sizes: ReadonlyArray<readonly [number, number]>,
  parameters: Record<string, string> = {},
  config: Record<string, unknown> = { onDemandMaintenance: { defragmentation: {} } },
) => {
  const gateway = await startFakeGateway({
    "/v3/cluster/member/list": () =>
      ok({
        members: [0, 1, 2].map((index) => ({
          ID: String(100 + index),
          name: `test-etcd-${index}`,
          clientURLs: [`http://${memberHost(index)}:${gateway.port}`],
        })),
      }),
    "/v3/maintenance/status": (call) => {
      const index = [0, 1, 2].find((i) => call.host?.startsWith(memberHost(i))) ?? 0;
      const [dbSize, dbSizeInUse] = sizes[index] ?? [0, 0];
      return ok({ header: { revision: "42" }, dbSize: String(dbSize), dbSizeInUse: String(dbSizeInUse) });
    },
  });
  fake = gateway;
  const resolve = [0, 1, 2, -1].map((index) => ({
    host: index < 0 ? host : memberHost(index),
    port: "*" as const,
    address: "127.0.0.1",
  }));
  const layer = Layer.mergeAll(
    memoryObjectReaderLayer(world([["etcd", etcdObject({ clientPort: gateway.port })]])),
    nodeEtcdGatewayLayer({ resolve }),
  );
  const guard = defragmentationGuard((effect) => Effect.runPromise(effect.pipe(Effect.provide(layer))));
  const schedule = scheduleWith(config, parameters);
  return guard({
    schedule,
    run: runObject(schedule, Date.UTC(2026, 0, 2, 3)),
    parameters,
    signal: new AbortController().signal,
  });
};

describe("the defragmentation guard reads every member's sizes", () => {
  it("refuses when no member would reclaim anything, naming each member's sizes", async () => {
    const verdict = await ask([
      [100 * MiB, 100 * MiB],
      [80 * MiB, 80 * MiB],
      [90 * MiB, 90 * MiB],
    ]);
    expect(verdict).toEqual({ allow: false, reason: expect.stringContaining("test-etcd-2") });
    expect(verdict.allow ? "" : verdict.reason).toMatch(/^no member would reclaim 1 bytes/u);
  });

  it("allows when one member would reclaim at least minReclaimBytes", async () => {
    const verdict = await ask(
      [
        [100 * MiB, 100 * MiB],
        [100 * MiB, 40 * MiB],
        [100 * MiB, 99 * MiB],
      ],
      { minReclaimBytes: "50Mi" },
    );
    expect(verdict).toEqual({ allow: true });
  });

  it("refuses below minFragmentationPercent even when bytes would be reclaimed", async () => {
    const verdict = await ask(
      [
        [100 * MiB, 60 * MiB],
        [100 * MiB, 60 * MiB],
        [100 * MiB, 60 * MiB],
      ],
      { minFragmentationPercent: "50" },
    );
    expect(verdict.allow).toBe(false);
  });

  it("refuses a template that does not defragment, naming spec.guard.name", async () => {
    const verdict = await ask([[1, 0]], {}, { onDemandSnapshot: { type: "full" } });
    expect(verdict).toEqual({ allow: false, reason: expect.stringMatching(/^spec\.guard\.name: /u) });
  });
});

describe("the defragmentation rule", () => {
  it("names a bad parameter and what it accepts", () => {
    expect(parseDefragmentationRule({ minReclaimBytes: "lots" })).toEqual(
      Result.fail('spec.guard.parameters.minReclaimBytes: "lots" is not a size (e.g. 104857600 or 100Mi)'),
    );
    expect(Result.isFailure(parseDefragmentationRule({ minFragmentationPercent: "120" }))).toBe(true);
    expect(Result.isFailure(parseDefragmentationRule({ minReclaim: "1" }))).toBe(true);
  });

  it("never allows a defragmentation that reclaims nothing, whatever the thresholds", () => {
    const rule = parseDefragmentationRule({ minReclaimBytes: "0" });
    if (Result.isFailure(rule)) throw new Error(rule.failure);
    expect(defragmentationVerdict([{ member: "m", dbSize: 10, dbSizeInUse: 10 }], rule.success).allow).toBe(
      false,
    );
    expect(defragmentationVerdict([{ member: "m", dbSize: 10, dbSizeInUse: 9 }], rule.success).allow).toBe(
      true,
    );
  });
});
