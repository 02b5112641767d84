/**
 * The environment deploy/deployment.yaml gives the controller container (NODE_OPTIONS, MALLOC_ARENA_MAX
 * …) and the node flags of the image's ENTRYPOINT, read from those files, so that tests and the
 * benchmark run the controller process as deployed.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";
import { repoRoot } from "./cluster.ts";

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The literal `env` values of the Deployment's containers. */
export const deployedEnv = (): Record<string, string> => {
  const text = readFileSync(join(repoRoot, "deploy", "deployment.yaml"), "utf8");
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

/** The node flags of the image's ENTRYPOINT (the Dockerfile's), between node and the script. */
export const deployedNodeFlags = (): string[] => {
  const text = readFileSync(join(repoRoot, "Dockerfile"), "utf8");
  const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(text)?.[1];
  if (entrypoint === undefined) throw new Error("Dockerfile: no ENTRYPOINT in exec form found");
  const parts: unknown = JSON.parse(entrypoint);
  if (!Array.isArray(parts) || !parts.every((part) => typeof part === "string"))
    throw new Error(`Dockerfile: ENTRYPOINT ${entrypoint} is not a list of strings`);
  return parts.slice(1).filter((part) => part.startsWith("--"));
};
