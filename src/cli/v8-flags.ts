/**
 * V8 settings that Node does not accept in NODE_OPTIONS (it allows only a short list of V8 flags
 * there), applied by `opstask controller` from OPSTASK_V8_FLAGS before the controller's code loads.
 *
 * The Deployment sets `--optimize-for-size` this way (why and what it saves:
 * bench/PROFILE.md#v8s-modes-measured); set before the controller's code loads, it applies to every
 * heap decision.
 *
 * Only flags (`--name` or `--name=value`) are taken: a value that is not one is an error naming the
 * variable, not a silently ignored setting. The variable is the operator's, like NODE_OPTIONS.
 */
import { setFlagsFromString } from "node:v8";

export const v8FlagsVariable = "OPSTASK_V8_FLAGS";

/** The flags of `value`, or the text of what is wrong with it. */
export const parseV8Flags = (
  value: string,
):
  | { readonly ok: true; readonly flags: readonly string[] }
  | { readonly ok: false; readonly error: string } => {
  const flags = value.split(/\s+/).filter((flag) => flag !== "");
  const bad = flags.find((flag) => !/^--[a-z][a-z0-9_-]*(=[^\s]+)?$/.test(flag));
  return bad === undefined
    ? { ok: true, flags }
    : {
        ok: false,
        error: `${v8FlagsVariable}: "${bad}" is not a V8 flag; give flags such as --optimize-for-size, separated by spaces (or unset the variable)`,
      };
};

/** Applies OPSTASK_V8_FLAGS from `env`; the error text when it is malformed. */
export const applyV8Flags = (env: NodeJS.ProcessEnv): string | undefined => {
  const value = env[v8FlagsVariable];
  if (value === undefined || value.trim() === "") return undefined;
  const parsed = parseV8Flags(value);
  if (!parsed.ok) return parsed.error;
  for (const flag of parsed.flags) setFlagsFromString(flag);
  return undefined;
};
