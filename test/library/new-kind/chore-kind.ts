/**
 * A task kind of a made-up operator, built only with opstask's public API: `Chore`
 * (`house.opstask.dev/v1`), whose config union had one member, `sweep`, and gains a second, `ping`.
 * Adding `ping` touched exactly three places, each marked "new member": its schema member here, its
 * handler and its registry entry in chore-handlers.ts. Nothing in opstask changed.
 */
import * as Schema from "effect/Schema";
import {
  configMember,
  configUnion,
  defineTaskKind,
  ObjectMeta,
  TaskStatusSchema,
} from "../../../src/index.ts";

export const Group = "house.opstask.dev";
export const Version = "v1";
export const Kind = "Chore";
export const Plural = "chores";

export const ChoreConfig = configUnion({
  sweep: Schema.Struct({ room: Schema.String }),
  // new member (1/3): its schema.
  ping: Schema.Struct({ target: Schema.String }),
});

export const ChoreSchema = Schema.Struct({
  apiVersion: Schema.optionalKey(Schema.String),
  kind: Schema.optionalKey(Schema.String),
  metadata: ObjectMeta,
  spec: Schema.Struct({
    house: Schema.optionalKey(Schema.String),
    ttlSecondsAfterFinished: Schema.Number,
    config: ChoreConfig,
  }),
  status: Schema.optionalKey(TaskStatusSchema),
});

export type Chore = typeof ChoreSchema.Type;

export const choreKind = defineTaskKind({
  group: Group,
  version: Version,
  kind: Kind,
  plural: Plural,
  finalizer: `${Group}/chore`,
  vocabulary: { group: "house" },
  schema: ChoreSchema,
  ttlSeconds: (task) => task.spec.ttlSecondsAfterFinished,
  admissionGroup: (task) => task.spec.house,
  member: (task) => configMember(task.spec.config),
  status: (task) => task.status,
});
