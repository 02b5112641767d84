/**
 * The benchmark's controller process as the Deployment runs it: bundled as the image bundles the CLI
 * (scripts/bundle.ts), with the Node options and environment of deploy/deployment.yaml, read from that
 * file so that the figures follow it.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseAllDocuments } from "yaml";
import { bundle } from "../scripts/bundle.ts";

const root = fileURLToPath(new URL("..", import.meta.url));

/** Bundles bench/cluster-controller.ts into .build/bench; returns the entry to fork. */
export const bundleControllerEntry = (): Promise<string> =>
  bundle("bench/cluster-controller.ts", ".build/bench");

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
