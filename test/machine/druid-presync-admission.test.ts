/**
 * docs/contract.md §16: etcd-druid's own presync snapshots (`presync-snapshot-hibernation-<n>` …, owned by
 * their Etcd as controller) are admitted next under both duplicate policies — never Rejected as a
 * duplicate, ahead of queued tasks, beside a recovery that only waits for its confirmation — and
 * Rejected at once (ERR_PEER_TASK_EXCLUSIVE) while a confirmed recovery changes the etcd's members. Run in
 * the memory interpreter with scripted handlers; the pure rule (machine/admission.ts) has its own property.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { TaskStatus } from "../../src/api/status.ts";
import type { Behaviour } from "../../src/interpreters/memory/controller.ts";
import type { JsonObject } from "../../src/interpreters/memory/merge-patch.ts";
import { blockingPeer } from "../../src/machine/admission.ts";
import type {
  AdmissionActivity,
  DuplicatePolicy,
  PeerTask,
  TaskObservation,
} from "../../src/machine/types.ts";
import { completed, namespace, type Script, simulation, taskObject } from "../support/simulation.ts";

const etcd = "e1";
const presyncName = "presync-snapshot-hibernation-0";

/** A task as etcd-druid's Etcd controller creates it (statefulset.go `createPreSyncTask`). */
const presync = (
  name = presyncName,
  /** null: no owner references at all. */
  owner: { readonly name?: string; readonly controller?: boolean } | null = {},
): JsonObject => ({
  apiVersion: "druid.gardener.cloud/v1alpha1",
  kind: "EtcdOpsTask",
  metadata: {
    name,
    namespace,
    ...(owner === null
      ? {}
      : {
          ownerReferences: [
            {
              apiVersion: "druid.gardener.cloud/v1alpha1",
              kind: "Etcd",
              name: owner.name ?? etcd,
              uid: "etcd-uid",
              controller: owner.controller ?? true,
              blockOwnerDeletion: true,
            },
          ],
        }),
  },
  spec: { etcdName: etcd, config: { onDemandSnapshot: { type: "full" } } },
});

const recovery = (name: string, confirmed: boolean): JsonObject => ({
  apiVersion: "druid.gardener.cloud/v1alpha1",
  kind: "EtcdOpsTask",
  metadata: {
    name,
    namespace,
    ...(confirmed ? { annotations: { "druid.gardener.cloud/confirm-recovery": "true" } } : {}),
  },
  spec: { etcdName: etcd, ttlSecondsAfterFinished: 10, config: { recoverFromQuorumLoss: {} } },
});

/** Execute hangs for the named tasks (a slow snapshot, a recovery at work); everything else completes. */
const hangingFor =
  (...names: string[]): Script =>
  (task, phase) =>
    phase === "execute" && names.includes(task.metadata.name) ? { kind: "hang" } : completed("done");

/** A recovery that waits for its confirmation: Execute answers "retry, nothing happened" each time. */
const waitingRecovery: Behaviour = {
  kind: "return",
  outcome: { kind: "retry", description: "Step 1/13 WaitConfirmation: Awaiting user confirmation" },
};

const setup = (policy: DuplicatePolicy, script: Script) => {
  const sim = simulation(script, { duplicatePolicy: policy });
  const status = (name: string): TaskStatus => {
    const stored = sim.server.get(namespace, name);
    return stored.ok ? ((stored.value.status ?? {}) as TaskStatus) : {};
  };
  return { ...sim, status };
};

const policies: ReadonlyArray<DuplicatePolicy> = ["reject", "queue"];

describe.each(policies)("druid's presync snapshot under the %s policy (docs/contract.md §16)", (policy) => {
  it("beside a running snapshot it waits, is never Rejected, and is admitted next, ahead of older queued tasks", () => {
    const { server, controller, status } = setup(policy, hangingFor("scheduled"));
    const started: string[] = [];
    server.watch((event) => {
      const name = String((event.object.metadata as JsonObject).name);
      const state = (event.object.status as TaskStatus | undefined)?.state;
      if (state === "InProgress" && !started.includes(name)) started.push(name);
    });
    server.create(taskObject("scheduled", { etcd }));
    controller.runUntilIdle();
    controller.advanceAndRun(1_000);
    server.create(taskObject("queued", { etcd }));
    controller.runUntilIdle();
    controller.advanceAndRun(1_000);
    server.create(presync());
    controller.runUntilIdle();
    expect(status(presyncName)).toMatchObject({
      state: "Pending",
      lastOperation: { description: "Waiting for EtcdOpsTask scheduled on the same etcd to finish" },
    });
    expect(status(presyncName).lastErrors ?? []).toEqual([]);
    expect(status("queued").state).toBe(policy === "reject" ? "Rejected" : "Pending");

    controller.resolve(namespace, "scheduled", {
      kind: "completed",
      description: "Snapshot created successfully",
    });
    controller.runUntilIdle();
    expect(status(presyncName).state).toBe("Succeeded");
    // The queued task, older than the presync, runs after it.
    expect(started).toEqual(
      policy === "queue" ? ["scheduled", presyncName, "queued"] : ["scheduled", presyncName],
    );
  });

  it("the queued task waits for the presync snapshot that came after it, naming it", () => {
    const { server, controller, status } = setup(policy, hangingFor("scheduled", presyncName));
    server.create(taskObject("scheduled", { etcd }));
    controller.runUntilIdle();
    controller.advanceAndRun(1_000);
    server.create(taskObject("queued", { etcd }));
    controller.advanceAndRun(1_000);
    server.create(presync());
    controller.runUntilIdle();
    controller.resolve(namespace, "scheduled", {
      kind: "completed",
      description: "Snapshot created successfully",
    });
    controller.runUntilIdle();
    expect(status(presyncName).state).toBe("InProgress");
    if (policy === "queue")
      expect(status("queued")).toMatchObject({
        state: "Pending",
        lastOperation: { description: `Waiting for EtcdOpsTask ${presyncName} on the same etcd to finish` },
      });
  });

  it("beside a recovery that only waits for its confirmation it is admitted at once", () => {
    const script: Script = (task, phase) =>
      phase === "execute" && task.metadata.name === "recover" ? waitingRecovery : completed("done");
    const { server, controller, status } = setup(policy, script);
    server.create(recovery("recover", false));
    controller.runUntilIdle();
    expect(status("recover").state).toBe("InProgress");
    server.create(presync());
    controller.runUntilIdle();
    expect(status(presyncName).state).toBe("Succeeded");
    expect(status("recover").state).toBe("InProgress");
  });

  it("while a confirmed recovery changes the members it is Rejected at once with ERR_PEER_TASK_EXCLUSIVE", () => {
    const { server, controller, status } = setup(policy, hangingFor("recover"));
    server.create(recovery("recover", true));
    controller.runUntilIdle();
    server.create(presync());
    controller.runUntilIdle();
    expect(status(presyncName)).toMatchObject({
      state: "Rejected",
      lastOperation: {
        type: "Admit",
        state: "Failed",
        description: "EtcdOpsTask recover holds the same etcd exclusively",
      },
    });
    expect(status(presyncName).lastErrors?.map((error) => error.description)).toEqual([
      "[Operation: Admit, Code: ERR_PEER_TASK_EXCLUSIVE] message: etcd is held exclusively, cause: EtcdOpsTask recover is changing etcd default/e1; create this task again once it has finished",
    ]);
  });

  it.each([
    ["no owner reference", presync(presyncName, null)],
    ["an owner that is not its controller", presync(presyncName, { controller: false })],
    ["another Etcd as controller", presync(presyncName, { name: "e2" })],
    ["another name", presync("presync-snapshot-hibernation-x")],
    ["a name of a user's", presync("my-snapshot-0")],
  ])("a task with %s is no presync task: it is admitted as any task is", (_, object) => {
    const { server, controller, status } = setup(policy, hangingFor("scheduled"));
    server.create(taskObject("scheduled", { etcd }));
    controller.runUntilIdle();
    controller.advanceAndRun(1_000);
    server.create(object);
    controller.runUntilIdle();
    const name = String((object.metadata as JsonObject).name);
    expect(status(name).state).toBe(policy === "reject" ? "Rejected" : "Pending");
  });
});

// ---- the pure rule ------------------------------------------------------------------------------

const task = (name: string, createdAt: number, expedited: boolean): TaskObservation => ({
  namespace,
  name,
  uid: name,
  createdAt,
  finalizers: [],
  ttlSeconds: 10,
  group: etcd,
  ...(expedited ? { expedited: true } : {}),
  status: {},
});

const peerArbitrary = fc.record({
  name: fc.constantFrom("a", "b", "c", "d", "e", "f"),
  createdAt: fc.integer({ min: 0, max: 3 }),
  state: fc.constantFrom<PeerTask["state"]>(undefined, "Pending", "InProgress", "Succeeded"),
  expedited: fc.boolean(),
  activity: fc.constantFrom<AdmissionActivity | undefined>(undefined, "waiting", "working", "exclusive"),
});

type PeerShape = typeof peerArbitrary extends fc.Arbitrary<infer T> ? T : never;

const asPeerTask = (peer: PeerShape): PeerTask => ({
  name: peer.name,
  uid: peer.name,
  createdAt: peer.createdAt,
  state: peer.state,
  deleting: false,
  ...(peer.expedited ? { expedited: true } : {}),
  ...(peer.activity === undefined ? {} : { activity: peer.activity }),
});

describe("the admission rule of expedited tasks (machine/admission.ts)", () => {
  it("an expedited task waits only for a working InProgress peer or an older expedited one, preferring the exclusive", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(peerArbitrary, { selector: (peer) => peer.name, maxLength: 6 }),
        fc.integer({ min: 0, max: 3 }),
        (raw, createdAt) => {
          const peers = raw.map(asPeerTask);
          const blocker = blockingPeer(task("z", createdAt, true), peers);
          if (blocker === undefined) {
            expect(peers.some((peer) => peer.state === "InProgress" && peer.activity !== "waiting")).toBe(
              false,
            );
            return;
          }
          if (blocker.state === "InProgress") {
            expect(blocker.activity).not.toBe("waiting");
            if (peers.some((peer) => peer.state === "InProgress" && peer.activity === "exclusive"))
              expect(blocker.activity).toBe("exclusive");
          } else {
            expect(blocker.expedited).toBe(true);
            expect(blocker.createdAt).toBeLessThanOrEqual(createdAt);
          }
        },
      ),
    );
  });

  it("among Pending tasks exactly one may proceed: the oldest expedited one, else the oldest", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(
          fc.record({
            name: fc.string({ minLength: 1, maxLength: 3 }),
            createdAt: fc.integer({ min: 0, max: 3 }),
            expedited: fc.boolean(),
          }),
          { selector: (each) => each.name, minLength: 1, maxLength: 6 },
        ),
        (tasks) => {
          const observations = tasks.map((each) => task(each.name, each.createdAt, each.expedited));
          const proceeding = observations.filter((each) => {
            const peers: PeerTask[] = observations
              .filter((other) => other.uid !== each.uid)
              .map((other) => ({
                name: other.name,
                uid: other.uid,
                createdAt: other.createdAt,
                state: "Pending",
                deleting: false,
                ...(other.expedited === true ? { expedited: true } : {}),
              }));
            return blockingPeer(each, peers) === undefined;
          });
          expect(proceeding).toHaveLength(1);
          const first = [...observations].sort((a, b) =>
            a.expedited !== b.expedited
              ? a.expedited === true
                ? -1
                : 1
              : a.createdAt - b.createdAt || (a.name < b.name ? -1 : 1),
          )[0];
          expect(proceeding[0]?.name).toBe(first?.name);
        },
      ),
    );
  });
});
