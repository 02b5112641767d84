/**
 * Issue 41 point 5: `describe` shows the result and the conditions of a kind that has them (a library
 * kind's `status.result` and `status.conditions`), escaped for the terminal as every text it prints;
 * a kind without them (EtcdOpsTask) shows neither.
 */
import * as Schema from "effect/Schema";
import { describe, expect, it } from "vitest";
import { cliKindOf } from "../../src/cli/task/cli-kind.ts";
import { renderDescription } from "../../src/cli/task/describe.ts";
import { etcdCliKind } from "../../src/cli/task/etcd-kind.ts";
import { viewOf } from "../../src/cli/task/task-view.ts";
import { withDefault } from "../../src/crd.ts";
import { configUnion, defineTaskKind } from "../../src/index.ts";

const vacuumKind = defineTaskKind({
  group: "tests.opstask.dev",
  version: "v1",
  kind: "Vacuum",
  plural: "vacuums",
  spec: Schema.Struct({
    ttlSecondsAfterFinished: Schema.Number.pipe(withDefault(600)),
    config: configUnion({ vacuum: Schema.Struct({ table: Schema.String }) }),
  }),
  result: Schema.Struct({ reclaimedBytes: Schema.Number, table: Schema.String }),
});

const metadata = {
  name: "v",
  namespace: "ns",
  uid: "u",
  resourceVersion: "1",
  creationTimestamp: "2026-11-25T12:00:00Z",
};
const at = "2026-11-25T12:00:05Z";
const condition = (type: string, status: string) => ({
  type,
  status,
  observedGeneration: 1,
  lastTransitionTime: at,
  reason: "Succeeded",
  message: "Vacuumed \u001b[2Jorders",
});

describe("describe", () => {
  it("shows a library kind's result and conditions, escaped", () => {
    const view = viewOf(cliKindOf(vacuumKind), {
      apiVersion: "tests.opstask.dev/v1",
      kind: "Vacuum",
      metadata,
      spec: { ttlSecondsAfterFinished: 600, config: { vacuum: { table: "orders" } } },
      status: {
        state: "Succeeded",
        lastTransitionTime: at,
        result: { reclaimedBytes: 4096, table: "orders\u001b]0;owned\u0007" },
        conditions: [condition("Succeeded", "True"), condition("Failed", "False")],
      },
    });
    const text = renderDescription(view, [], Date.parse("2026-11-25T12:01:00Z"));
    expect(text).toContain('Result:      {"reclaimedBytes":4096,"table":"orders\\u001b]0;owned\\u0007"}\n');
    expect(text).toContain(
      "\nConditions:\n  Succeeded=True  Succeeded: Vacuumed \\x1b[2Jorders\n  Failed=False  Succeeded: Vacuumed \\x1b[2Jorders\n",
    );
    // biome-ignore lint/suspicious/noControlCharactersInRegex: no control character may reach the terminal.
    expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f]/);
  });

  it("shows neither for a kind without them", () => {
    const view = viewOf(etcdCliKind, {
      apiVersion: "druid.gardener.cloud/v1alpha1",
      kind: "EtcdOpsTask",
      metadata,
      spec: { etcdName: "etcd-a", config: { onDemandSnapshot: { type: "full" } } },
      status: { state: "Succeeded", lastTransitionTime: at },
    });
    const text = renderDescription(view, [], Date.parse("2026-11-25T12:01:00Z"));
    expect(text).not.toContain("Result:");
    expect(text).not.toContain("Conditions:");
  });
});
