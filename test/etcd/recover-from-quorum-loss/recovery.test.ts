/**
 * Issue 26, point 3: `recoverFromQuorumLoss` under the memory interpreter. Admission refuses a cluster
 * that has quorum; the 13 steps run in druid's order with druid's names and annotations; the task
 * waits for its confirmation; a crash at every progress write still recovers the cluster, and no
 * destructive action runs again once its step was recorded; every wait's deadline fails the task
 * naming its step, and Cleanup then gives the Etcd back to druid's controller.
 */
import { describe, expect, it } from "vitest";
import { recoveryStepNames } from "../../../src/etcd/recover-from-quorum-loss/handler.ts";
import {
  descriptions,
  drive,
  etcdName,
  makeRecoveryWorld,
  type RecoveryWorld,
  recoveryTask,
} from "./world.ts";

const destructive = ["scale", "deletePvcs", "deleteLeases", "writeConfigData"] as const;
/** The calls that change the cluster. */
const changes: ReadonlySet<string> = new Set([...destructive, "annotateEtcd"]);

const recovered = (world: RecoveryWorld) => {
  const { cluster } = world;
  expect(world.sim.state("r")).toBe("Succeeded");
  expect(Object.fromEntries(cluster.etcdAnnotations)).toEqual({
    "druid.gardener.cloud/operation": "reconcile",
  });
  // The volumes of the lost cluster are gone; member 0's new one (made by the scale-up) is there.
  expect([...cluster.pvcs]).toEqual([`data-${etcdName}-0`]);
  expect(cluster.leases.size).toBe(0);
  expect(cluster.configMaps.get(`${etcdName}-config`)).toContain("initial-cluster-state: new");
  expect(cluster.configMaps.get(`${etcdName}-config`)).toContain(
    "initial-cluster: etcd-main-0=https://etcd-main-0.etcd-main-peer.default.svc:2380\n",
  );
};

describe("recoverFromQuorumLoss: admission refuses a cluster whose quorum is not known to be lost", () => {
  const cases = [
    [
      "Ready=True",
      {
        conditions: [
          { type: "Ready", status: "True", reason: "Quorate" },
          { type: "BackupReady", status: "True", reason: "x" },
        ],
      },
      "has not lost quorum (Ready=True",
    ],
    [
      "Ready=False for another reason",
      {
        conditions: [
          { type: "Ready", status: "False", reason: "NotAllMembersReady" },
          { type: "BackupReady", status: "True", reason: "x" },
        ],
      },
      "QuorumLost signal has not been observed",
    ],
    [
      "no Ready condition",
      { conditions: [{ type: "BackupReady", status: "True", reason: "x" }] },
      "no Ready condition is published",
    ],
    ["a single member", { replicas: 1 }, "single-member etcd cluster"],
    ["no backup store", { backup: false }, "requires a configured backup store"],
    [
      "backup not Ready",
      { conditions: [{ type: "Ready", status: "False", reason: "QuorumLost" }] },
      "backup to be in a Ready state",
    ],
  ] as const;
  for (const [what, etcd, text] of cases)
    it(`${what}: Rejected with ERR_ADMIT_RECOVER_FROM_QUORUM_LOSS, nothing touched`, async () => {
      const world = makeRecoveryWorld({ etcd });
      world.sim.create(recoveryTask("r"));
      await drive(world, "r");
      expect(world.sim.state("r")).toBe("Rejected");
      expect(world.sim.status("r")?.lastErrors?.at(-1)?.code).toBe("ERR_ADMIT_RECOVER_FROM_QUORUM_LOSS");
      expect(world.sim.status("r")?.lastOperation?.description).toContain(text);
      expect(world.cluster.calls).toEqual([]);
    });

  it("allowDataLoss admits an Etcd without a backup store", async () => {
    const world = makeRecoveryWorld({ etcd: { backup: false } });
    world.sim.create(recoveryTask("r", { config: { allowDataLoss: true } }));
    await drive(world, "r");
    recovered(world);
  });
});

describe("recoverFromQuorumLoss: the steps", () => {
  it("recovers: 13 steps in druid's order, each shown as 'Step n/13 <name>', each destructive action once", async () => {
    const world = makeRecoveryWorld();
    world.sim.create(recoveryTask("r"));
    await drive(world, "r");
    recovered(world);
    expect(recoveryStepNames).toEqual([
      "WaitConfirmation",
      "SuspendReconciliation",
      "DisableComponentProtection",
      "ScaleDown",
      "WaitScaleDown",
      "DeletePVCs",
      "DeleteMemberLeases",
      "PatchConfigMap",
      "ScaleUp",
      "WaitPodReady",
      "ReenableReconciliation",
      "WaitEtcdReady",
      "ReenableComponentProtection",
    ]);
    const shown = descriptions(world, "r");
    for (const [index, name] of recoveryStepNames.slice(0, -1).entries())
      expect(
        shown.some((text) => text.startsWith(`Step ${index + 1}/13 ${name}: `)),
        name,
      ).toBe(true);
    expect(shown.at(-1)).toBe(
      "Recovery from quorum loss completed successfully. All etcd cluster members are ready.",
    );
    expect(world.cluster.calls.filter((call) => call.op === "scale").map((call) => call.args[0])).toEqual([
      0, 1,
    ]);
    for (const op of ["deletePvcs", "deleteLeases", "writeConfigData"] as const)
      expect(world.cluster.count(op), op).toBe(1);
    const task = world.sim.object("r")?.metadata as { annotations: Record<string, string> };
    expect(task.annotations["druid.gardener.cloud/quorum-recovery-last-completed-step"]).toBe(
      "ReenableComponentProtection",
    );
  });

  it("waits for the confirmation annotation before touching anything", async () => {
    const world = makeRecoveryWorld();
    world.sim.create(recoveryTask("r", { confirmed: false }));
    await drive(world, "r", () => world.sim.now() > Date.UTC(2026, 0, 1, 1));
    expect(world.sim.state("r")).toBe("InProgress");
    expect(world.sim.status("r")?.lastOperation?.description).toMatch(
      /^Step 1\/13 WaitConfirmation: Awaiting user confirmation/,
    );
    // Admit read the cluster; nothing was changed.
    expect(world.cluster.calls.filter((call) => changes.has(call.op))).toEqual([]);
    world.sim.patch("r", { metadata: { annotations: { "druid.gardener.cloud/confirm-recovery": "true" } } });
    await drive(world, "r");
    recovered(world);
  });

  it("stops before scaling down when the quorum came back meanwhile", async () => {
    const world = makeRecoveryWorld();
    world.sim.create(recoveryTask("r", { confirmed: false }));
    await drive(world, "r", () => world.sim.now() > Date.UTC(2026, 0, 1, 0, 5));
    world.objects.put("etcds.druid.gardener.cloud", {
      ...(await import("./world.ts")).etcdObject({
        conditions: [{ type: "Ready", status: "True", reason: "Quorate" }],
      }),
    });
    world.sim.patch("r", { metadata: { annotations: { "druid.gardener.cloud/confirm-recovery": "true" } } });
    await drive(world, "r");
    expect(world.sim.state("r")).toBe("Failed");
    expect(world.sim.status("r")?.lastOperation?.description).toMatch(
      /^Step 4\/13 ScaleDown: Quorum is no longer lost/,
    );
    expect(world.cluster.count("scale")).toBe(0);
    // M5: the refusal hands the Etcd back in the same pass, not at the TTL: steps 3 and 2 undone.
    expect(world.sim.exists("r")).toBe(true);
    expect(Object.fromEntries(world.cluster.etcdAnnotations)).toEqual({});
    expect(world.sim.events("r").filter((event) => event.reason === "StepUndone")).toHaveLength(2);
    world.sim.delete("r");
    await drive(world, "r");
    expect(Object.fromEntries(world.cluster.etcdAnnotations)).toEqual({});
    // Cleanup found nothing left to undo.
    expect(world.sim.events("r").filter((event) => event.reason === "StepUndone")).toHaveLength(2);
  });
});

describe("recoverFromQuorumLoss: every destructive step checks again what it relies on", () => {
  it("members back up after WaitScaleDown (someone scaled the StatefulSet): DeletePVCs refuses, the volumes stay, the Etcd is handed back at once", async () => {
    const world = makeRecoveryWorld();
    world.cluster.autoConverge = false;
    world.sim.create(recoveryTask("r"));
    await drive(world, "r", () => world.cluster.count("scale") > 0);
    // The members are down, and someone has asked for 3 again.
    world.cluster.statefulSet = { desired: 3, current: 0, ready: 0 };
    await drive(world, "r");
    expect(world.sim.state("r")).toBe("Failed");
    expect(world.sim.status("r")?.lastOperation?.description).toMatch(
      /^Step 6\/13 DeletePVCs: StatefulSet etcd-main is not scaled down; not going on to delete the members' PVCs/,
    );
    expect(world.cluster.count("deletePvcs")).toBe(0);
    expect(world.cluster.pvcs.size).toBe(3);
    expect(Object.fromEntries(world.cluster.etcdAnnotations)).toEqual({});
  });

  it("quorum back after the scale-down: DeleteMemberLeases is not reached, DeletePVCs refuses", async () => {
    const world = makeRecoveryWorld();
    world.cluster.autoConverge = false;
    world.sim.create(recoveryTask("r"));
    await drive(world, "r", () => world.cluster.count("scale") > 0);
    world.objects.put("etcds.druid.gardener.cloud", {
      ...(await import("./world.ts")).etcdObject({
        conditions: [{ type: "Ready", status: "True", reason: "Quorate" }],
      }),
    });
    world.cluster.converge();
    await drive(world, "r");
    expect(world.sim.state("r")).toBe("Failed");
    expect(world.sim.status("r")?.lastOperation?.description).toMatch(
      /^Step 6\/13 DeletePVCs: Quorum is no longer lost; not going on to delete the members' PVCs/,
    );
    expect(world.cluster.count("deletePvcs")).toBe(0);
    expect(world.cluster.count("deleteLeases")).toBe(0);
  });

  it("a StatefulSet gone during WaitScaleDown is not a scaled-down one: Failed, nothing deleted", async () => {
    const world = makeRecoveryWorld();
    world.cluster.autoConverge = false;
    world.sim.create(recoveryTask("r"));
    await drive(world, "r", () => world.cluster.count("scale") > 0);
    world.cluster.statefulSet = undefined;
    await drive(world, "r");
    expect(world.sim.state("r")).toBe("Failed");
    expect(world.sim.status("r")?.lastOperation?.description).toMatch(
      /^Step 5\/13 WaitScaleDown: StatefulSet etcd-main is gone/,
    );
    expect(world.cluster.count("deletePvcs")).toBe(0);
  });
});

describe("recoverFromQuorumLoss: Admit checks what the later steps need (L1)", () => {
  const refused = async (world: RecoveryWorld, cause: string) => {
    world.sim.create(recoveryTask("r"));
    await drive(world, "r");
    expect(world.sim.state("r")).toBe("Rejected");
    const error = world.sim.status("r")?.lastErrors?.at(-1);
    expect(error?.code).toBe("ERR_ADMIT_RECOVER_FROM_QUORUM_LOSS");
    expect(error?.description).toContain(cause);
    expect(world.cluster.calls.filter((call) => changes.has(call.op))).toEqual([]);
  };

  it("no StatefulSet", async () => {
    const world = makeRecoveryWorld();
    world.cluster.statefulSet = undefined;
    await refused(world, "statefulset default/etcd-main not found");
  });

  it("a StatefulSet that the Etcd does not control", async () => {
    const world = makeRecoveryWorld();
    if (world.cluster.statefulSet !== undefined)
      world.cluster.statefulSet.controller = { kind: "Etcd", name: etcdName, uid: "another-etcd" };
    await refused(
      world,
      "is controlled by Etcd etcd-main (uid another-etcd), not Etcd etcd-main (uid etcd-uid)",
    );
  });

  it("no member volumes", async () => {
    const world = makeRecoveryWorld();
    world.cluster.autoConverge = false;
    world.cluster.pvcs.clear();
    await refused(
      world,
      "no persistentvolumeclaims in default match app.kubernetes.io/managed-by=etcd-druid",
    );
  });

  it("a volume with druid's labels that is no member's", async () => {
    const world = makeRecoveryWorld();
    world.cluster.pvcs.add("precious-data");
    await refused(world, "from precious-data");
  });

  it("an etcd.conf.yaml without member 0 in initial-cluster", async () => {
    const world = makeRecoveryWorld();
    world.cluster.configMaps.set(
      `${etcdName}-config`,
      "initial-cluster: etcd-main-1=https://etcd-main-1:2380\nadvertise-client-urls: https://x:2379\n",
    );
    await refused(world, "initial-cluster has no entry for etcd-main-0");
  });

  it("no ConfigMap", async () => {
    const world = makeRecoveryWorld();
    world.cluster.configMaps.clear();
    await refused(world, "ConfigMap default/etcd-main-config has no etcd.conf.yaml");
  });
});

describe("recoverFromQuorumLoss: progress a task author writes is never taken (H1)", () => {
  const stepKey = "druid.gardener.cloud/quorum-recovery-last-completed-step";

  it("a task created at WaitScaleDown without confirmation: Rejected with ERR_FORGED_PROGRESS, nothing touched", async () => {
    const world = makeRecoveryWorld({ etcd: { backup: false } });
    world.sim.create({
      metadata: { name: "r", annotations: { [stepKey]: "WaitScaleDown" } },
      spec: {
        etcdName,
        ttlSecondsAfterFinished: 3600,
        config: { recoverFromQuorumLoss: { allowDataLoss: true } },
      },
    });
    await drive(world, "r");
    expect(world.sim.state("r")).toBe("Rejected");
    const error = world.sim.status("r")?.lastErrors?.at(-1);
    expect(error?.code).toBe("ERR_FORGED_PROGRESS");
    expect(error?.description).toContain(`create the task without ${stepKey}`);
    expect(world.cluster.calls.filter((call) => changes.has(call.op))).toEqual([]);
  });

  it("a step rewound mid-run: no step runs again", async () => {
    const world = makeRecoveryWorld();
    world.cluster.podsNeverReady = true;
    world.sim.create(recoveryTask("r"));
    await drive(world, "r", () => world.cluster.count("podReady") > 0);
    world.sim.patch("r", {
      metadata: {
        annotations: { [stepKey]: "WaitScaleDown", "druid.gardener.cloud/quorum-recovery-wait-start": null },
      },
    });
    world.cluster.pvcs.add(`data-${etcdName}-2`);
    world.cluster.podsNeverReady = false;
    await drive(world, "r");
    expect(world.sim.state("r")).toBe("Succeeded");
    for (const op of ["deletePvcs", "deleteLeases", "writeConfigData"] as const)
      expect(world.cluster.count(op)).toBe(1);
    expect(world.cluster.count("scale")).toBe(2);
    expect(world.cluster.pvcs.has(`data-${etcdName}-2`)).toBe(true);
  });
});

describe("recoverFromQuorumLoss: progress is the controller's own", () => {
  it("a controller left mid-recovery lends nothing to another one's task of the same UID", async () => {
    const first = makeRecoveryWorld();
    first.cluster.autoConverge = false;
    first.sim.create(recoveryTask("r"));
    await drive(first, "r", () => first.cluster.count("scale") > 0);
    // Another simulation (its UIDs start again at uid-1), the same handler.
    const second = makeRecoveryWorld();
    second.sim.create(recoveryTask("r"));
    expect(second.sim.get("r")?.metadata.uid).toBe(first.sim.get("r")?.metadata.uid);
    await drive(second, "r");
    expect(second.sim.state("r")).toBe("Succeeded");
    // Steps 2, 3, 11 and 13, and the five destructive steps keeping druid's controller away.
    expect(second.cluster.count("annotateEtcd")).toBe(9);
    expect(descriptions(second, "r").some((text) => text.startsWith("Step 2/13 SuspendReconciliation"))).toBe(
      true,
    );
  });
});

describe("recoverFromQuorumLoss: a task deleted before it finished", () => {
  it("Cleanup removes the Etcd annotations it set, so druid's Etcd controller is not left suspended", async () => {
    const world = makeRecoveryWorld();
    world.cluster.autoConverge = false;
    world.sim.create(recoveryTask("r"));
    await drive(world, "r", () => world.cluster.count("scale") > 0);
    expect(world.sim.state("r")).toBe("InProgress");
    expect([...world.cluster.etcdAnnotations.keys()].sort()).toEqual([
      "druid.gardener.cloud/disable-etcd-component-protection",
      "druid.gardener.cloud/suspend-etcd-spec-reconcile",
    ]);
    world.sim.delete("r");
    await drive(world, "r");
    expect(world.sim.exists("r")).toBe(false);
    expect(Object.fromEntries(world.cluster.etcdAnnotations)).toEqual({});
  });
});

describe("recoverFromQuorumLoss: a crash just before and just after every progress write", async () => {
  const baseline = makeRecoveryWorld();
  baseline.sim.create(recoveryTask("r"));
  await drive(baseline, "r");
  const writes = baseline.progressWrites.length;

  it(`counts ${writes} progress writes (13 completions, 4 wait starts)`, () => {
    expect(writes).toBe(17);
  });

  for (let at = 0; at < writes; at++)
    for (const mode of ["before", "after"] as const)
      it(`write ${at + 1}, crash ${mode} it: the cluster is recovered, and a recorded destructive step never runs again`, async () => {
        const world = makeRecoveryWorld();
        world.fault = { at, mode };
        world.sim.create(recoveryTask("r"));
        await drive(world, "r");
        expect(world.fault).toBeUndefined();
        recovered(world);
        // After the crash, only the one step whose completion was lost may run again.
        const repeats = destructive.map((op) => world.cluster.count(op) - baseline.cluster.count(op));
        expect(repeats.reduce((sum, n) => sum + n, 0)).toBeLessThanOrEqual(mode === "before" ? 1 : 0);
      });
});

describe("recoverFromQuorumLoss: each wait's deadline fails the task naming its step", () => {
  it("WaitScaleDown past scaleDownTimeout: Failed, ERR_EXECUTE_RECOVER_FROM_QUORUM_LOSS naming step 5/13; Cleanup removes the Etcd annotations", async () => {
    const world = makeRecoveryWorld();
    world.cluster.autoConverge = false;
    world.sim.create(recoveryTask("r", { config: { scaleDownTimeout: "30s" } }));
    await drive(world, "r");
    expect(world.sim.state("r")).toBe("Failed");
    const error = world.sim.status("r")?.lastErrors?.at(-1);
    expect(error?.code).toBe("ERR_EXECUTE_RECOVER_FROM_QUORUM_LOSS");
    expect(error?.description).toContain("step 5/13 WaitScaleDown did not finish within 30s");
    expect(world.cluster.count("deletePvcs")).toBe(0);
    world.sim.delete("r");
    await drive(world, "r");
    expect(Object.fromEntries(world.cluster.etcdAnnotations)).toEqual({});
  });

  it("WaitPodReady past podReadyTimeout (default 180s): Failed naming step 10/13", async () => {
    const world = makeRecoveryWorld();
    world.cluster.podsNeverReady = true;
    world.sim.create(recoveryTask("r"));
    await drive(world, "r");
    expect(world.sim.state("r")).toBe("Failed");
    expect(world.sim.status("r")?.lastErrors?.at(-1)?.description).toContain(
      "step 10/13 WaitPodReady did not finish within 180s",
    );
  });

  it("WaitEtcdReady past etcdReadyTimeout: Failed naming step 12/13", async () => {
    const world = makeRecoveryWorld();
    world.druidRestoresReadiness = false;
    world.sim.create(recoveryTask("r", { config: { etcdReadyTimeout: "2m" } }));
    await drive(world, "r");
    expect(world.sim.state("r")).toBe("Failed");
    expect(world.sim.status("r")?.lastErrors?.at(-1)?.description).toContain(
      "step 12/13 WaitEtcdReady did not finish within 120s",
    );
  });
});

describe("recoverFromQuorumLoss: a second task starts at step 1", () => {
  it("after a first task failed mid-way and was deleted, the next one runs every step again", async () => {
    const world = makeRecoveryWorld();
    world.cluster.podsNeverReady = true;
    world.sim.create(recoveryTask("r"));
    await drive(world, "r");
    world.sim.delete("r");
    await drive(world, "r");
    world.cluster.podsNeverReady = false;
    const before = world.cluster.count("deletePvcs");
    world.sim.create(recoveryTask("r2"));
    await drive(world, "r2");
    expect(world.sim.state("r2")).toBe("Succeeded");
    expect(world.cluster.count("deletePvcs")).toBe(before + 1);
    expect(descriptions(world, "r2").some((text) => text.startsWith("Step 2/13 SuspendReconciliation"))).toBe(
      true,
    );
  });
});
