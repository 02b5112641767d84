/**
 * What `installCrd` takes: a YAML file, a CustomResourceDefinition object, or `taskCrd(...)`'s result
 * (whose errors then fail the install, naming each schema part the CRD cannot express).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { CustomResourceDefinition, TaskCrdResult } from "../crd/task-crd.ts";

export type CrdSource = string | CustomResourceDefinition | TaskCrdResult;

/** The YAML file of `source` (written into `dir` when it is an object; JSON is YAML). */
export const crdFileOf = (source: CrdSource, dir: string, index: number): string => {
  if (typeof source === "string") return source;
  if ("ok" in source) {
    if (!source.ok) throw new Error(`installCrd: taskCrd(...) made no CRD:\n  ${source.errors.join("\n  ")}`);
    return crdFileOf(source.crd, dir, index);
  }
  const file = join(dir, `crd-${index}-${source.metadata.name}.json`);
  writeFileSync(file, JSON.stringify(source));
  return file;
};
