/**
 * What a stored task's status holds beyond the lifecycle's own fields, read as the API server keeps
 * it: `status.result` (JSON) and `status.conditions`. The lifecycle never reads them back, so its
 * decoded status does not carry them; tests, scripts and the CLI read them here.
 */
import type { TaskCondition } from "../../api/status.ts";

const field = (value: unknown, key: string): unknown =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? Reflect.get(value, key) : undefined;

/** A condition as the controller writes it (the status subresource is the controller's alone). */
const isCondition = (value: unknown): value is TaskCondition =>
  (field(value, "status") === "True" || field(value, "status") === "False") &&
  typeof field(value, "type") === "string" &&
  typeof field(value, "reason") === "string" &&
  typeof field(value, "message") === "string" &&
  typeof field(value, "lastTransitionTime") === "string";

/** `status.result` of a stored task object, if it has one. */
export const storedResult = (object: unknown): unknown => field(field(object, "status"), "result");

/** `status.conditions` of a stored task object; undefined when it has none. */
export const storedConditions = (object: unknown): ReadonlyArray<TaskCondition> | undefined => {
  const conditions = field(field(object, "status"), "conditions");
  return Array.isArray(conditions)
    ? conditions.flatMap((item: unknown) => (isCondition(item) ? [item] : []))
    : undefined;
};
