/**
 * The benchmark's controller process as the Deployment runs it: bundled as the image bundles the CLI
 * (scripts/bundle.ts), with the environment of deploy/deployment.yaml (test/support/deployed-env.ts).
 */
import { bundle } from "../scripts/bundle.ts";

export { deployedEnv } from "../test/support/deployed-env.ts";

/** Bundles bench/cluster-controller.ts into .build/bench; returns the entry to fork. */
export const bundleControllerEntry = (): Promise<string> =>
  bundle("bench/cluster-controller.ts", ".build/bench");
