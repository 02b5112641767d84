/**
 * The benchmark's controller process as the Deployment runs it: compiled JavaScript (the image runs
 * `dist/`, not the TypeScript sources: type stripping alone costs ~30 MB of RSS) with the Node options
 * and environment of deploy/deployment.yaml, read from that file so that the figures follow it.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";

const root = fileURLToPath(new URL("..", import.meta.url));

/** Compiles bench/cluster-controller.ts and what it imports into .build/bench; returns the entry. */
export const compileControllerEntry = (): string => {
  execFileSync(`${root}node_modules/.bin/tsc`, ["-p", `${root}bench/tsconfig.controller.json`], {
    stdio: "inherit",
  });
  return `${root}.build/bench/bench/cluster-controller.js`;
};

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The `env` of the controller container in deploy/deployment.yaml (literal values only). */
export const deployedEnv = (): Record<string, string> => {
  const text = readFileSync(`${root}deploy/deployment.yaml`, "utf8");
  for (const document of parseAllDocuments(text)) {
    const object: unknown = document.toJS();
    if (!isRecord(object) || object.kind !== "Deployment") continue;
    const template = isRecord(object.spec) && isRecord(object.spec.template) ? object.spec.template : {};
    const containers = isRecord(template.spec) ? template.spec.containers : undefined;
    if (!Array.isArray(containers)) break;
    const env: Record<string, string> = {};
    for (const container of containers) {
      if (!isRecord(container) || !Array.isArray(container.env)) continue;
      for (const variable of container.env)
        if (isRecord(variable) && typeof variable.name === "string" && typeof variable.value === "string")
          env[variable.name] = variable.value;
    }
    return env;
  }
  throw new Error("deploy/deployment.yaml: no Deployment with a container env found");
};
