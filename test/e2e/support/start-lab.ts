// The lab lives in src (`opstask dev --cluster` starts the same one); tests keep this path.
export * from "../../../src/devcluster/lab/start-lab.ts";
