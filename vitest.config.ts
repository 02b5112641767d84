import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const source = (path: string) => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  // The examples import the package by name, as a user does; in the repository that is its source.
  resolve: {
    alias: [
      { find: /^opstask$/, replacement: source("./src/index.ts") },
      { find: /^opstask\/testing$/, replacement: source("./src/testing.ts") },
      { find: /^opstask\/crd$/, replacement: source("./src/crd.ts") },
    ],
  },
  test: {
    include: ["test/**/*.test.ts", "examples/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 300_000,
  },
});
