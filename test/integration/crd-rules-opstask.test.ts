// docs/contract.md §1 CRD rules against opstask's CRDs (deploy/crds/): every druid rule and druid-valid sample
// behaves as with druid's CRD, plus the rules of the members opstask adds. Table: crd-rules.ts.
import { CustomObjectsApi } from "@kubernetes/client-node";
import { beforeAll, describe, expect, it } from "vitest";
import { createTestNamespace, useControlPlane } from "../support/cluster.ts";
import {
  caseName,
  crdRuleCases,
  isDruidValidSample,
  opstaskCrds,
  outcomeFor,
  type RunContext,
  runCase,
} from "./crd-rules.ts";

const cluster = useControlPlane({ crds: opstaskCrds });

describe("EtcdOpsTask CRD validation: opstask's CRD", () => {
  let ctx: RunContext;
  beforeAll(async () => {
    const kc = cluster().makeKubeConfig();
    ctx = {
      api: kc.makeApiClient(CustomObjectsApi),
      namespace: await createTestNamespace(kc, "crd-opstask"),
    };
  });

  it("the table expects every druid-valid sample to be accepted by opstask's CRD too", () => {
    const samples = crdRuleCases.filter(isDruidValidSample);
    expect(samples.length).toBeGreaterThan(0);
    for (const c of samples) expect(outcomeFor(c, "opstask"), c.title).toHaveProperty("accepted", true);
  });

  for (const [index, c] of crdRuleCases.entries()) {
    if (outcomeFor(c, "opstask") === undefined) continue;
    it(`${c.rule}: ${c.title}`, () => runCase(ctx, c, "opstask", caseName(index)));
  }
});
