/**
 * Effect Schema for `EtcdOpsTask.status`, decoding to exactly the types in `status.ts` (checked at
 * compile time below). It mirrors druid's CRD with one narrowing: `lastOperation.type` and `.state` must
 * be values the controller (and druid) writes; a foreign value means neither wrote the object, so
 * decoding fails and the caller falls back to the metadata it gets with the error (`decodeEtcdOpsTask`).
 */
import * as Schema from "effect/Schema";
import { type Assignable, Rfc3339 } from "./schema-helpers.ts";
import { TaskStates, type TaskStatus } from "./status.ts";

export const OperationTypes = ["Admit", "Execution", "Cleanup"] as const;
export const OperationStates = ["InProgress", "Completed", "Failed"] as const;

/** `maxItems` of `status.lastErrors` in the CRD. */
export const LastErrorsMaxItems = 10;

export const LastOperationSchema = Schema.Struct({
  type: Schema.Literals(OperationTypes),
  state: Schema.Literals(OperationStates),
  description: Schema.String,
  runID: Schema.String,
  lastUpdateTime: Rfc3339,
});

export const LastErrorSchema = Schema.Struct({
  code: Schema.String,
  description: Schema.String,
  observedAt: Rfc3339,
});

export const TaskStatusSchema = Schema.Struct({
  state: Schema.optionalKey(Schema.Literals(TaskStates)),
  lastTransitionTime: Schema.optionalKey(Rfc3339),
  startedAt: Schema.optionalKey(Rfc3339),
  lastOperation: Schema.optionalKey(LastOperationSchema),
  lastErrors: Schema.optionalKey(Schema.Array(LastErrorSchema).check(Schema.isMaxLength(LastErrorsMaxItems))),
});

/** The schema decodes to `TaskStatus` and `TaskStatus` encodes through it: the two cannot drift. */
export type StatusSchemaMatchesTaskStatus = [
  Assignable<typeof TaskStatusSchema.Type, TaskStatus>,
  Assignable<TaskStatus, typeof TaskStatusSchema.Type>,
];
