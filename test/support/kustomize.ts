// The renderer lives in src (`opstask dev --cluster` deploys with it); tests keep this path.
export * from "../../src/devcluster/lab/kustomize.ts";
