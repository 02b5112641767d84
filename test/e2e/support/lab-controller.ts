// The lab's controller deployment lives in src (`opstask dev --cluster` uses it); tests keep this path.
export * from "../../../src/devcluster/lab/controller.ts";
