/**
 * Differential test: the same generated scenarios run through the memory interpreter (the per-key core
 * under a fake clock, test/support/differential-memory.ts) and through the cluster runtime against a
 * real kube-apiserver + etcd (test/support/differential-cluster.ts). Per task, both worlds must make
 * the same writes (who, verb, fields changed, in order; differential-writes.ts), the same handler
 * calls (phases, in order) and the same Events (type, reason, note), and leave the same objects. The scenarios cover the core's rules: our own
 * writes' echoes, the release of a task whose last finalizer we removed, settled tasks at a takeover,
 * and a takeover of a pass in flight (differential-scenario.ts).
 *
 * Not compared: passes and requests that write nothing (reads, the watch). How many passes a
 * real controller runs depends on timing — events that arrive while a pass runs share the next one,
 * and periodic requeues count wall time — while the memory driver takes one event at a time. A pass
 * that acts shows up as a write or a call, which are compared.
 *
 * Both worlds run the same core (src/reconcile/core.ts), so a rule broken inside it breaks both alike:
 * this test checks the drivers around it (what they feed the core, how they perform its commands,
 * list at a restart, cut calls); the property tests check the core's rules themselves.
 *
 * A disagreement is a bug in the memory model or in the runtime, to be fixed there, never hidden here.
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { druidCrds, useControlPlane } from "../support/cluster.ts";
import { controllerUser, writeAudit } from "../support/differential-audit.ts";
import { runOnCluster } from "../support/differential-cluster.ts";
import { runInMemory } from "../support/differential-memory.ts";
import { type Command, commandArb, examples } from "../support/differential-scenario.ts";
import { callsPerTask, eventsPerTask, finalsByName, writesPerTask } from "../support/differential-writes.ts";

const audit = writeAudit(mkdtempSync(join(tmpdir(), "opstask-differential-")));
const cluster = useControlPlane({
  crds: druidCrds,
  users: [{ name: controllerUser, groups: ["system:masters"] }],
  apiserverArgs: audit.apiserverArgs,
});

/** What is compared of one world. */
const observed = (world: {
  readonly writes: Parameters<typeof writesPerTask>[0];
  readonly calls: Parameters<typeof callsPerTask>[1];
  readonly events: Parameters<typeof eventsPerTask>[1];
  readonly finals: Parameters<typeof finalsByName>[0];
}) => ({
  writes: writesPerTask(world.writes),
  calls: callsPerTask(world.writes, world.calls),
  events: eventsPerTask(world.writes, world.events),
  finals: finalsByName(world.finals),
});

describe("differential: memory interpreter vs the cluster runtime on a real API server", () => {
  it("agrees per task on writes (who, verb, fields changed), handler calls, Events and final objects", async () => {
    const plane = cluster();
    const kubeConfigs = { user: plane.makeKubeConfig(), controller: plane.makeKubeConfig(controllerUser) };
    // Each command costs `settleMs` of wall time: 4 random scenarios of up to 4 commands bound the run.
    const scenarios = fc.array(commandArb, { minLength: 1, maxLength: 4 });
    await fc.assert(
      fc.asyncProperty(scenarios, async (commands: Command[]) => {
        const memory = observed(runInMemory(commands));
        const real = observed(await runOnCluster(kubeConfigs, audit, commands));
        if (process.env.OPSTASK_DIFFERENTIAL_SHOW === "1")
          console.log(JSON.stringify({ commands, memory, real }, null, 1));
        expect(real).toEqual(memory);
      }),
      {
        // The examples count among the runs: they come first, then the random scenarios.
        numRuns: examples.length + Number(process.env.OPSTASK_DIFFERENTIAL_RUNS ?? 4),
        examples: examples.map((commands) => [[...commands]]),
        endOnFailure: true,
        ...(process.env.OPSTASK_DIFFERENTIAL_SEED === undefined
          ? {}
          : { seed: Number(process.env.OPSTASK_DIFFERENTIAL_SEED) }),
      },
    );
  }, 600_000);
});
