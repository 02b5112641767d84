/**
 * `recoverFromQuorumLoss` is opstask's member until an etcd-druid release declares it (etcd-druid's pull
 * request #1358 was closed unmerged; docs/contract.md §15): opstask's CRD calls it experimental, and
 * a vendored etcd-druid EtcdOpsTask CRD that declares it (none does today) must declare the schema
 * opstask's CRD declares, or tasks written for one would not mean the same to the other. Texts
 * (`description`) may differ; everything a value is checked against may not.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { OpenApiSchema } from "../../src/api/crd/openapi.ts";
import {
  druidCrdDir,
  druidReference,
  type Json,
  loadCrdDocument,
  openApiOf,
  ourTaskCrd,
  schemaAt,
} from "./crd-support.ts";

const memberPath = ["spec", "config", "recoverFromQuorumLoss"];

/** The schema without its texts, keys sorted, so that two schemas compare by what they check. */
const checked = (node: Json | OpenApiSchema | undefined): unknown => {
  if (Array.isArray(node)) return node.map((each) => checked(each));
  if (typeof node !== "object" || node === null) return node;
  return Object.fromEntries(
    Object.entries(node)
      .filter(([key]) => key !== "description")
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([key, value]) => [key, checked(value as Json)]),
  );
};

/** What differs between etcd-druid's declaration of the member and opstask's; empty when they agree. */
const differences = (druid: OpenApiSchema, ours: OpenApiSchema): string[] => {
  const problems: string[] = [];
  const theirs = checked(druid) as Record<string, unknown>;
  const mine = checked(ours) as Record<string, unknown>;
  for (const key of new Set([...Object.keys(theirs), ...Object.keys(mine)]))
    if (JSON.stringify(theirs[key]) !== JSON.stringify(mine[key]))
      problems.push(
        `${key}: etcd-druid ${JSON.stringify(theirs[key])}, opstask ${JSON.stringify(mine[key])}`,
      );
  return problems;
};

/** Every etcd-druid EtcdOpsTask CRD the repository vendors, and the reference copy when one is named. */
const druidTaskCrds = async (): Promise<ReadonlyArray<string>> => {
  const vendored = readdirSync(druidCrdDir)
    .filter((file) => file.endsWith("etcdopstasks.yaml"))
    .map((file) => join(druidCrdDir, file));
  const reference = await druidReference();
  return reference === undefined
    ? vendored
    : [...vendored, join(reference.crdDir, "druid.gardener.cloud_etcdopstasks.yaml")];
};

const ours = (): OpenApiSchema => {
  const member = schemaAt(openApiOf(ourTaskCrd()), memberPath);
  if (member === undefined) throw new Error("opstask's CRD declares no recoverFromQuorumLoss");
  return member;
};

describe("recoverFromQuorumLoss in the CRDs (docs/contract.md §15)", () => {
  it("opstask's CRD calls the member experimental and names etcd-druid's closed pull request", () => {
    expect(ours().description).toMatch(
      /Experimental: .*pull request #1358, which was closed\nwithout being merged/s,
    );
  });

  it("a vendored etcd-druid CRD that declares the member declares opstask's schema", async () => {
    const files = await druidTaskCrds();
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const druid = schemaAt(openApiOf(loadCrdDocument(file)), memberPath);
      if (druid !== undefined)
        expect({ file, differences: differences(druid, ours()) }).toEqual({ file, differences: [] });
    }
  });

  it("the comparison sees a changed type, pattern or field, and ignores texts", () => {
    const mine = ours();
    const properties = mine.properties ?? {};
    const retyped = { ...mine, properties: { ...properties, allowDataLoss: { type: "string" } } };
    const repatterned = {
      ...mine,
      properties: {
        ...properties,
        scaleDownTimeout: { ...properties.scaleDownTimeout, pattern: "^[0-9]+s$" },
      },
    };
    const extended = { ...mine, properties: { ...properties, memberName: { type: "string" } } };
    const reworded = { ...mine, description: "RecoverFromQuorumLoss, as etcd-druid words it." };
    expect(differences(retyped as OpenApiSchema, mine)).toHaveLength(1);
    expect(differences(repatterned as OpenApiSchema, mine)).toHaveLength(1);
    expect(differences(extended as OpenApiSchema, mine)).toHaveLength(1);
    expect(differences(reworded as OpenApiSchema, mine)).toEqual([]);
  });
});
