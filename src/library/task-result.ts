/**
 * A kind's typed result: `kind.succeeded({ description, result })` encodes `result` with the kind's
 * result schema and checks its size before it becomes an outcome, so what the controller keeps (the
 * outcome until its status write lands) and writes (`status.result`) is bounded and valid. A result
 * that does not encode, or is over the limit, fails the task with a code naming the field and the fix.
 */
import * as Result from "effect/Result";
import type * as Schema from "effect/Schema";
import * as SchemaParser from "effect/SchemaParser";
import { formatDecodeError } from "../api/decode-error.ts";
import type { EncodedResult, PhaseOutcome } from "../machine/types.ts";
import { failed } from "./outcome.ts";

/** The default bound of `status.result`, in bytes of JSON. */
export const DefaultMaxResultBytes = 8192;

/**
 * The largest `maxResultBytes` a kind may set: the result stays in the task, and a finished task must
 * still fit the controller's cache bound (`maxTaskBytes`, default 64 KiB) with its spec and status.
 */
export const MaxResultBytesLimit = 16 * 1024;

/** What a kind's `succeeded` takes: a description, and the result when the kind declares one. */
export type SucceededOutcome<Result> = [Result] extends [never]
  ? { readonly description: string; readonly result?: never }
  : { readonly description: string; readonly result: Result };

/** `succeeded` for a kind without a result schema: a plain completion. */
export const succeededWithoutResult = (outcome: { readonly description: string }): PhaseOutcome => ({
  kind: "completed",
  description: outcome.description,
});

/** A decode error line (`count: expected …`, `(root): …`) with its path under `status.result`. */
const underResult = (line: string): string =>
  line.startsWith("(root)")
    ? `status.result${line.slice("(root)".length)}`
    : `status.result${line.startsWith("[") ? "" : "."}${line}`;

/** `succeeded` for a kind whose `status.result` is `schema`, at most `maxBytes` bytes of JSON. */
export const succeededWith = <Result>(schema: Schema.Codec<Result, unknown>, maxBytes: number) => {
  const encode = SchemaParser.encodeUnknownResult(schema, { errors: "all" });
  return (outcome: SucceededOutcome<Result>): PhaseOutcome => {
    const encoded = encode(outcome.result);
    if (Result.isFailure(encoded))
      return failed("The result does not match the kind's result schema", {
        code: "ERR_INVALID_RESULT",
        message: formatDecodeError(encoded.failure).map(underResult).join("; "),
      });
    const json = JSON.stringify(encoded.success);
    const bytes = json === undefined ? 0 : new TextEncoder().encode(json).length;
    if (bytes > maxBytes)
      return failed("The result is too large for the task's status", {
        code: "ERR_RESULT_TOO_LARGE",
        message: `status.result is ${bytes} bytes of JSON, over the kind's limit of ${maxBytes}: return less, or raise maxResultBytes in defineTaskKind (at most ${MaxResultBytesLimit})`,
      });
    // A JSON round trip: the status holds plain data, never an object the handler may still change.
    const result = (json === undefined ? undefined : JSON.parse(json)) as EncodedResult | undefined;
    return {
      kind: "completed",
      description: outcome.description,
      ...(result === undefined ? {} : { result }),
    };
  };
};

/** A RangeError unless `maxResultBytes` is an integer in 1..MaxResultBytesLimit. */
export const checkMaxResultBytes = (maxResultBytes: number): number => {
  if (Number.isInteger(maxResultBytes) && maxResultBytes >= 1 && maxResultBytes <= MaxResultBytesLimit)
    return maxResultBytes;
  throw new RangeError(
    `maxResultBytes must be an integer from 1 to ${MaxResultBytesLimit} (bytes of JSON in status.result), got ${String(maxResultBytes)}`,
  );
};
