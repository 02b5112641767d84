/** Comparing druid's CRD with opstask's: everything of druid's must be in ours, unchanged. */
import { isJsonObject, type Json } from "./crd-support.ts";

export interface SupersetReport {
  /** Where ours differs from druid's (must be empty). */
  readonly violations: ReadonlyArray<string>;
  /** Properties ours adds (allowed only inside a `properties` map). */
  readonly added: ReadonlyArray<string>;
}

/**
 * Everything in druid's document must be in ours with the same value. The only thing ours may add is
 * a new entry in a `properties` map (a new field); any other added key (a tighter bound, an extra
 * required entry, an extra CEL rule, another printer column) is a violation.
 */
export const supersetReport = (
  druid: Json | undefined,
  ours: Json | undefined,
  path = "",
): SupersetReport => {
  const violations: Array<string> = [];
  const added: Array<string> = [];
  const walk = (a: Json | undefined, b: Json | undefined, at: string, inProperties: boolean): void => {
    if (Array.isArray(a)) {
      if (!Array.isArray(b) || a.length !== b.length) {
        violations.push(`${at}: expected ${JSON.stringify(a)}, got ${JSON.stringify(b)}`);
        return;
      }
      for (const [index, item] of a.entries()) walk(item, b[index], `${at}[${index}]`, false);
      return;
    }
    if (isJsonObject(a)) {
      if (!isJsonObject(b)) {
        violations.push(`${at}: expected an object, got ${JSON.stringify(b)}`);
        return;
      }
      for (const key of Object.keys(a)) {
        if (!(key in b)) violations.push(`${at}.${key}: missing`);
        else walk(a[key], b[key], `${at}.${key}`, key === "properties" && !inProperties);
      }
      for (const key of Object.keys(b)) {
        if (key in a) continue;
        if (inProperties) added.push(`${at}.${key}`);
        else violations.push(`${at}.${key}: added (${JSON.stringify(b[key])})`);
      }
      return;
    }
    if (a !== b) violations.push(`${at}: expected ${JSON.stringify(a)}, got ${JSON.stringify(b)}`);
  };
  walk(druid, ours, path, false);
  return { violations, added };
};
