import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { configDefaults, defineConfig } from "vitest/config";

// Tests that run the real etcd-druid (test/integration/druid-*.test.ts, and test/e2e/druid-*.test.ts
// on the lab) run where it is built (`scripts/testbin druid`, which scripts/test runs) or given
// (src/devcluster/druid/peer.ts); nothing else depends on it.
const druidGiven =
  [process.env.OPSTASK_DRUID_BINARY, process.env.OPSTASK_DRUID_SOURCE].some(
    (value) => value !== undefined && value !== "",
  ) ||
  spawnSync("bash", [fileURLToPath(new URL("./scripts/testbin", import.meta.url)), "--check", "druid"], {
    stdio: "ignore",
  }).status === 0;
const druidTests = ["test/integration/druid-*.test.ts", "test/e2e/druid-*.test.ts"];
if (!druidGiven && process.env.VITEST_POOL_ID === undefined)
  console.log(
    `${druidTests.join(" and ")} did not run: build etcd-druid with scripts/testbin druid (scripts/test does), or set OPSTASK_DRUID_BINARY or OPSTASK_DRUID_SOURCE`,
  );

const testFiles = ["test/**/*.test.ts", "examples/**/*.test.ts"];
const excluded = druidGiven ? configDefaults.exclude : [...configDefaults.exclude, ...druidTests];

/**
 * Files that run with no other test file beside them: they start the lab or a local node (one
 * machine-wide set of network namespaces, 198.18 addresses and a node slot each, and minutes of both
 * cores), build and run images with buildah/podman, or measure a process's idle CPU and wake-ups,
 * which a neighbour's load would disturb.
 */
const alone = [
  "test/e2e/**/*.test.ts",
  "test/integration/local-node*.test.ts",
  "test/image/**/*.test.ts",
  "test/integration/cluster-images.test.ts",
  "test/integration/idle-wakeups.test.ts",
];

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
    testTimeout: 60_000,
    hookTimeout: 300_000,
    // Two groups, one after the other: first every other file, two at a time (vitest's default on 2
    // cores is one worker); then the files in `alone`, one at a time and with nothing else running.
    projects: [
      {
        extends: true,
        test: {
          name: "parallel",
          include: testFiles,
          exclude: [...excluded, ...alone],
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: "alone",
          include: alone,
          exclude: excluded,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
