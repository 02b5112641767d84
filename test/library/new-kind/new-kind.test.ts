/**
 * A new task kind with a new config member (chore-kind.ts, chore-handlers.ts: three places touched),
 * run through `simulate()` and through the real runtime (`runTaskController`) on a real kube-apiserver.
 * Only the package entry points (`opstask`, `opstask/testing`) are imported. registry-without-ping.ts shows that leaving out the
 * registry entry fails type-checking.
 */
import { fileURLToPath } from "node:url";
import { CustomObjectsApi, type KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runTaskController, type TaskController, type TaskStatus } from "../../../src/index.ts";
import { simulate } from "../../../src/testing.ts";
import { createTestNamespace, useControlPlane } from "../../support/cluster.ts";
import { waitFor } from "../../support/wait.ts";
import { choreHandlers } from "./chore-handlers.ts";
import { choreKind, Group, Kind, Plural, Version } from "./chore-kind.ts";

const chore = (name: string, config: Readonly<Record<string, unknown>>, ttl = 2) => ({
  metadata: { name },
  spec: { house: "h1", ttlSecondsAfterFinished: ttl, config },
});

describe("a new config member, in simulation", () => {
  it("runs a ping task to Succeeded and deletes it after its TTL", () => {
    const sim = simulate({ kind: choreKind, handlers: choreHandlers });
    sim.create(chore("p", { ping: { target: "db" } }, 60));
    sim.run();
    expect(sim.state("p")).toBe("Succeeded");
    expect(sim.status("p")?.lastOperation?.description).toBe("Pinged db");
    sim.advance(61_000);
    expect(sim.exists("p")).toBe(false);
    expect(sim.calls("p").map((c) => c.phase)).toEqual(["admit", "execute", "cleanup"]);
  });

  it("rejects a member the registry lacks with ERR_UNSUPPORTED_TASK, listing the registry's members", () => {
    const sim = simulate({ kind: choreKind, handlers: choreHandlers });
    sim.create(chore("x", { dust: {} }, 60));
    sim.run();
    expect(sim.state("x")).toBe("Rejected");
    expect(sim.status("x")?.lastErrors?.[0]?.description).toContain("(supported: ping, sweep)");
  });
});

const cluster = useControlPlane({ crds: [fileURLToPath(new URL("./crd.yaml", import.meta.url))] });
const resource = { group: Group, version: Version, plural: Plural };

describe("a new config member, on a real API server", () => {
  let kc: KubeConfig;
  let api: CustomObjectsApi;
  let namespace: string;
  let controller: TaskController;

  beforeAll(async () => {
    kc = cluster().makeKubeConfig();
    api = kc.makeApiClient(CustomObjectsApi);
    namespace = await createTestNamespace(kc, "chores");
    controller = await runTaskController({
      kind: choreKind,
      handlers: choreHandlers,
      kubeConfig: kc,
      namespace,
      logLevel: "none",
    });
  });
  afterAll(async () => {
    await controller?.stop();
  });

  it("runs a ping task to Succeeded and deletes it after its TTL", async () => {
    await api.createNamespacedCustomObject({
      ...resource,
      namespace,
      body: { apiVersion: `${Group}/${Version}`, kind: Kind, ...chore("p", { ping: { target: "db" } }) },
    });
    const read = async () => {
      try {
        return (await api.getNamespacedCustomObject({ ...resource, namespace, name: "p" })) as {
          status?: TaskStatus;
        };
      } catch {
        return undefined;
      }
    };
    const done = await waitFor("p to succeed", async () => {
      const task = await read();
      return task?.status?.state === "Succeeded" ? task : undefined;
    });
    expect(done.status?.lastOperation?.description).toBe("Pinged db");
    await waitFor("p to be deleted after its TTL", async () =>
      (await read()) === undefined ? true : undefined,
    );
  });
});
