/**
 * `opstask schedule` against a real kube-apiserver with the TaskSchedule CRD: create -f checks the
 * cron and the template before sending (a bad one is exit 2 naming the field, and nothing is created);
 * get, describe, suspend and resume; trigger creates a run named for this minute, owned by the
 * schedule, and a second trigger in the same minute gets AlreadyExists (exit 1), not a second run.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CustomObjectsApi } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { scheduleCommand } from "../../src/cli/schedule/schedule-command.ts";
import { etcdCliKind } from "../../src/cli/task/etcd-kind.ts";
import { runName, scheduleLabel } from "../../src/schedule/run-names.ts";
import { createTestNamespace, druidCrds, repoRoot, useControlPlane } from "../support/cluster.ts";
import { captureTaskIo } from "../support/task-io.ts";

const cluster = useControlPlane({
  crds: [...druidCrds, join(repoRoot, "deploy", "crds", "opstask.gardener.cloud_taskschedules.yaml")],
});
const tasks = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcdopstasks" };
const dir = mkdtempSync(join(tmpdir(), "opstask-schedule-cli-"));

const scheduleFile = (name: string, spec: Record<string, unknown>): string => {
  const path = join(dir, `${name}.yaml`);
  writeFileSync(
    path,
    stringify({
      apiVersion: "opstask.gardener.cloud/v1alpha1",
      kind: "TaskSchedule",
      metadata: { name },
      spec,
    }),
  );
  return path;
};

const snapshotSpec = {
  taskKind: { apiVersion: "druid.gardener.cloud/v1alpha1", kind: "EtcdOpsTask" },
  taskTemplate: { spec: { etcdName: "etcd-main", config: { onDemandSnapshot: { type: "full" } } } },
  schedule: "0 3 * * *",
  timeZone: "Europe/Berlin",
};

describe("opstask schedule", () => {
  it("create -f checks before sending; get, describe, suspend, resume and trigger work on the cluster", async () => {
    const kc = cluster().makeKubeConfig();
    const namespace = await createTestNamespace(kc, "schedule-cli");
    const schedule = scheduleCommand([etcdCliKind]);
    const cli = async (...argv: string[]) => {
      const { io, captured } = captureTaskIo();
      const code = await schedule([...argv, "--kubeconfig", cluster().kubeconfigPath, "-n", namespace], io);
      return { code, ...captured };
    };

    const badTemplate = await cli(
      "create",
      "-f",
      scheduleFile("bad", {
        ...snapshotSpec,
        taskTemplate: { spec: { etcdName: "etcd-main", config: { onDemandSnapshot: { type: "weekly" } } } },
      }),
    );
    expect(badTemplate.code).toBe(2);
    expect(badTemplate.err).toMatch(/spec\.taskTemplate\.spec\.config\.onDemandSnapshot\.type/u);
    const badCron = await cli(
      "create",
      "-f",
      scheduleFile("bad-cron", { ...snapshotSpec, schedule: "0 3 * *" }),
    );
    expect([badCron.code, badCron.err]).toEqual([
      2,
      expect.stringMatching(/spec\.schedule: "0 3 \* \*" is not a five-field cron/u),
    ]);
    const badZone = await cli(
      "create",
      "-f",
      scheduleFile("bad-zone", { ...snapshotSpec, timeZone: "Mars/Base" }),
    );
    expect([badZone.code, badZone.err]).toEqual([
      2,
      expect.stringMatching(/spec\.timeZone: "Mars\/Base" is not an IANA time zone/u),
    ]);
    expect((await cli("get")).out).toBe(`No schedules in ${namespace}.\n`);

    const created = await cli("create", "-f", scheduleFile("nightly", snapshotSpec));
    expect([created.code, created.out]).toEqual([0, "taskschedule.opstask.gardener.cloud/nightly created\n"]);
    const table = await cli("get");
    expect(table.out).toMatch(/^NAME +SCHEDULE +TIMEZONE +KIND +SUSPEND/u);
    expect(table.out).toMatch(/nightly +0 3 \* \* \* +Europe\/Berlin +EtcdOpsTask +false/u);

    expect((await cli("suspend", "nightly")).code).toBe(0);
    expect(JSON.parse((await cli("get", "nightly", "-o", "json")).out).spec.suspend).toBe(true);
    expect((await cli("resume", "nightly")).code).toBe(0);
    expect(JSON.parse((await cli("get", "nightly", "-o", "json")).out).spec.suspend).toBe(false);

    const before = Date.now();
    const triggered = await cli("trigger", "nightly");
    const minute = Math.floor(before / 60_000) * 60_000;
    // A minute boundary between the two reads names the run for either minute.
    const expected = [runName("nightly", minute), runName("nightly", minute + 60_000)];
    expect(triggered.code).toBe(0);
    const runNameCreated = /\/(\S+) created\n$/u.exec(triggered.out)?.[1] ?? "";
    expect(expected).toContain(runNameCreated);
    const again = await cli("trigger", "nightly");
    if (runName("nightly", Math.floor(Date.now() / 60_000) * 60_000) === runNameCreated) {
      expect(again.code).toBe(1);
      expect(again.err).toContain(`${runNameCreated} exists already`);
    }
    const run = (await kc
      .makeApiClient(CustomObjectsApi)
      .getNamespacedCustomObject({ ...tasks, namespace, name: runNameCreated })) as {
      metadata: { labels: Record<string, string>; ownerReferences: Array<{ kind: string; name: string }> };
      spec: { etcdName: string };
    };
    expect(run.metadata.labels[scheduleLabel]).toBe("nightly");
    expect(run.metadata.ownerReferences.map((owner) => [owner.kind, owner.name])).toEqual([
      ["TaskSchedule", "nightly"],
    ]);
    expect(run.spec.etcdName).toBe("etcd-main");

    const described = await cli("describe", "nightly");
    expect(described.code).toBe(0);
    expect(described.out).toContain("Schedule:      0 3 * * * (Europe/Berlin)");
    expect(described.out).toMatch(new RegExp(`Runs:\\n  NAME +SCHEDULED +STATE\\n  ${runNameCreated} `, "u"));

    const missing = await cli("describe", "nope");
    expect(missing.code).toBe(1);
  });
});
