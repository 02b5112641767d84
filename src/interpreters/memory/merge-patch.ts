/** JSON values and RFC 7386 JSON merge patch, the patch type opstask sends for custom resources. */
export type JsonValue = string | number | boolean | null | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

const isObject = (value: JsonValue | undefined): value is JsonObject =>
  value !== null && value !== undefined && typeof value === "object" && !Array.isArray(value);

/**
 * Applies `patch` to `target`: objects merge key by key, `null` removes a key, anything else (arrays
 * included) replaces. Hand-written: it is the ten lines of the RFC, smaller than any dependency.
 */
export const mergePatch = (target: JsonValue | undefined, patch: JsonValue): JsonValue => {
  if (!isObject(patch)) return patch;
  const result: JsonObject = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
};
