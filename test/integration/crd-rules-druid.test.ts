// docs/contract.md §1 CRD rules against etcd-druid's own CRDs (the reference behaviour). Table: crd-rules.ts.
import { CustomObjectsApi } from "@kubernetes/client-node";
import { beforeAll, describe, it } from "vitest";
import { createTestNamespace, druidCrds, useControlPlane } from "../support/cluster.ts";
import { caseName, crdRuleCases, outcomeFor, type RunContext, runCase } from "./crd-rules.ts";

const cluster = useControlPlane({ crds: druidCrds });

describe("EtcdOpsTask CRD validation: etcd-druid's CRD", () => {
  let ctx: RunContext;
  beforeAll(async () => {
    const kc = cluster().makeKubeConfig();
    ctx = { api: kc.makeApiClient(CustomObjectsApi), namespace: await createTestNamespace(kc, "crd-druid") };
  });

  for (const [index, c] of crdRuleCases.entries()) {
    if (outcomeFor(c, "druid") === undefined) continue;
    it(`${c.rule}: ${c.title}`, () => runCase(ctx, c, "druid", caseName(index)));
  }
});
