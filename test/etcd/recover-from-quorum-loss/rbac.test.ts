/**
 * The RBAC of quorum-loss recovery is opt-in (deploy/quorum-recovery/): exactly the verbs its steps
 * call, and not in deploy/'s default install. Without it, a step's Forbidden fails the task with a
 * message naming the directory, instead of retrying for ever.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { repoRoot } from "../../../scripts/gen-crd.ts";
import { drive, makeRecoveryWorld, recoveryTask } from "./world.ts";

const read = (path: string) => parse(readFileSync(join(repoRoot, path), "utf8")) as Record<string, unknown>;

describe("recoverFromQuorumLoss's RBAC", () => {
  it("deploy/quorum-recovery/clusterrole.yaml grants exactly the verbs the steps call", () => {
    const rules = read("deploy/quorum-recovery/clusterrole.yaml").rules as Array<{
      apiGroups: string[];
      resources: string[];
      verbs: string[];
    }>;
    const tuples = rules.flatMap((rule) =>
      rule.verbs.flatMap((verb) =>
        rule.apiGroups.flatMap((group) =>
          rule.resources.map((resource) => `${verb} ${group || "core"}/${resource}`),
        ),
      ),
    );
    expect(tuples.sort()).toEqual(
      [
        "patch druid.gardener.cloud/etcds",
        "patch apps/statefulsets/scale",
        "list core/persistentvolumeclaims",
        "delete core/persistentvolumeclaims",
        "list coordination.k8s.io/leases",
        "delete coordination.k8s.io/leases",
        "get core/configmaps",
        "patch core/configmaps",
        "get core/pods",
      ].sort(),
    );
  });

  it("is not part of deploy/'s default install", () => {
    const resources = read("deploy/kustomization.yaml").resources as string[];
    expect(resources.filter((resource) => resource.includes("quorum"))).toEqual([]);
  });

  it("a Forbidden step fails the task, naming deploy/quorum-recovery/", async () => {
    const world = makeRecoveryWorld();
    world.cluster.forbidden.add("annotateEtcd");
    world.sim.create(recoveryTask("r"));
    await drive(world, "r");
    expect(world.sim.state("r")).toBe("Failed");
    const error = world.sim.status("r")?.lastErrors?.at(-1);
    expect(error?.code).toBe("ERR_EXECUTE_RECOVER_FROM_QUORUM_LOSS");
    expect(error?.description).toContain("apply deploy/quorum-recovery/");
  });
});
