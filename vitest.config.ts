import { fileURLToPath } from "node:url";
import { configDefaults, defineConfig } from "vitest/config";

// Tests that run the real etcd-druid (test/integration/druid-*.test.ts) run only where it is given
// (test/support/druid-peer.ts); nothing else depends on it.
const druidGiven = [process.env.OPSTASK_DRUID_BINARY, process.env.OPSTASK_DRUID_SOURCE].some(
  (value) => value !== undefined && value !== "",
);
const druidTests = "test/integration/druid-*.test.ts";
if (!druidGiven && process.env.VITEST_POOL_ID === undefined)
  console.log(
    `${druidTests} did not run: set OPSTASK_DRUID_BINARY or OPSTASK_DRUID_SOURCE to run etcd-druid`,
  );

const source = (path: string) => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  // The examples import the package by name, as a user does; in the repository that is its source.
  resolve: {
    alias: [
      { find: /^opstask$/, replacement: source("./src/index.ts") },
      { find: /^opstask\/advanced$/, replacement: source("./src/advanced.ts") },
      { find: /^opstask\/testing$/, replacement: source("./src/testing.ts") },
      { find: /^opstask\/crd$/, replacement: source("./src/crd.ts") },
      { find: /^opstask\/cli$/, replacement: source("./src/cli.ts") },
    ],
  },
  test: {
    include: ["test/**/*.test.ts", "examples/**/*.test.ts"],
    exclude: druidGiven ? configDefaults.exclude : [...configDefaults.exclude, druidTests],
    testTimeout: 60_000,
    hookTimeout: 300_000,
  },
});
