/**
 * `Probe` (tests.opstask.dev/v1, plural `probes`): a kind defined with the library for the task CLI's
 * tests. Its admission group is a `target`, its one config member `ping` answers a string.
 */
import * as Schema from "effect/Schema";
import { cliKindOf } from "../../src/cli/task/cli-kind.ts";
import { configMember, configUnion, defineTaskKind, ObjectMeta, TaskStatusSchema } from "../../src/index.ts";

const group = "tests.opstask.dev";

const ProbeSchema = Schema.Struct({
  metadata: ObjectMeta,
  spec: Schema.Struct({
    target: Schema.String,
    ttlSecondsAfterFinished: Schema.Number,
    config: configUnion({ ping: Schema.Struct({ answer: Schema.String }) }),
  }),
  status: Schema.optionalKey(TaskStatusSchema),
});
export type Probe = typeof ProbeSchema.Type;

export const probeKind = defineTaskKind({
  group,
  version: "v1",
  kind: "Probe",
  plural: "probes",
  finalizer: `${group}/probe`,
  vocabulary: { group: "target" },
  schema: ProbeSchema,
  ttlSeconds: (task) => task.spec.ttlSecondsAfterFinished,
  admissionGroup: (task) => task.spec.target,
  member: (task) => configMember(task.spec.config),
  status: (task) => task.status,
});

/** The CLI's view of a Probe: a TARGET column and `ping <target>` as its summary. */
export const probeCliKind = cliKindOf(probeKind, {
  groupHeader: "TARGET",
  summary: (task: Probe) => `ping ${task.spec.target}`,
});
