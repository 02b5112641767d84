/**
 * What `opstask controller` loads: its resident memory is a target (≤ 150 MB with 10,000 tasks,
 * `scripts/bench cluster`), and one stray import undoes it. client-node (its generated API: ~85 MB
 * RSS), the Effect barrel, the task CLI and the dev cluster must stay out of the controller process.
 */
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { makeOpstaskCommands } from "../../src/cli/task/index.ts";
import { taskCommandNames } from "../../src/cli/task/names.ts";
import { repoRoot } from "../support/cluster.ts";
import { bundledCli } from "../support/opstask-process.ts";

const run = (...args: string[]): { loaded: string[]; builtins: string[]; stderr: string } =>
  runEntry(join(repoRoot, "src/cli/main.ts"), ...args);

const runEntry = (
  entry: string,
  ...args: string[]
): { loaded: string[]; builtins: string[]; stderr: string } => {
  let stderr = "";
  try {
    execFileSync(
      process.execPath,
      ["--import", join(repoRoot, "test/cli/fixtures/record-loads.mjs"), entry, ...args],
      { encoding: "utf8", stdio: ["ignore", "ignore", "pipe"], timeout: 30_000 },
    );
  } catch (error) {
    stderr = String((error as { stderr?: unknown }).stderr ?? "");
  }
  const lines = stderr.split("\n");
  const tagged = (tag: string) =>
    lines.filter((line) => line.startsWith(tag)).map((line) => line.slice(tag.length));
  return {
    loaded: tagged("loaded "),
    builtins: tagged("builtin "),
    stderr: lines.filter((line) => !line.startsWith("loaded ") && !line.startsWith("builtin ")).join("\n"),
  };
};

describe("opstask controller's imports", () => {
  it("loads neither client-node nor the effect barrel nor other commands' modules", () => {
    // A kubeconfig that does not exist: the command gets as far as reading it, then exits 2.
    const { loaded, stderr } = run("controller", "--kubeconfig", "/nonexistent/kubeconfig");
    expect(stderr).toContain("opstask controller: kubeconfig /nonexistent/kubeconfig cannot be read");
    expect(loaded.some((url) => url.includes("/src/cli/controller-command.ts"))).toBe(true);
    const unwanted = loaded.filter(
      (url) =>
        url.includes("/@kubernetes/client-node/") ||
        url.endsWith("/effect/dist/index.js") ||
        url.includes("/src/cli/task/index.ts") ||
        url.includes("/src/devcluster/"),
    );
    expect(unwanted).toEqual([]);
  });

  // Loaded where a feature needs them (a config or kubeconfig file in YAML, --inspect, --ui, `opstask
  // crd`), never at the start: what each costs is in bench/PROFILE.md. A controller that runs and
  // idles is checked the same way in test/integration/idle-wakeups.test.ts.
  it("loads neither the YAML parser nor the inspector relay, the task board or the CRD generator", () => {
    const { loaded, stderr } = run("controller", "--kubeconfig", "/nonexistent/kubeconfig");
    expect(stderr).toContain("opstask controller: kubeconfig /nonexistent/kubeconfig cannot be read");
    const unwanted = loaded.filter(
      (url) =>
        url.includes("/node_modules/yaml/") ||
        url.includes("/src/inspect/") ||
        url.includes("/src/ui/task-board.ts") ||
        url.includes("/src/ui/board-server.ts") ||
        url.includes("/src/library/crd/task-crd.ts"),
    );
    expect(unwanted).toEqual([]);
  });

  // An ES import of node:http reads its lazy exports and so loads Node's bundled undici (+11 MB RSS,
  // ~70 ms of CPU jitless), which opstask never uses: src/node-http.ts. Checked on the sources and on
  // the bundle the image runs.
  it.each([
    ["the sources", async () => join(repoRoot, "src/cli/main.ts")],
    ["the bundle", () => bundledCli()],
  ])("loads node:http but not Node's bundled undici, from %s", async (_, entry) => {
    const { builtins, stderr } = runEntry(
      await entry(),
      "controller",
      "--kubeconfig",
      "/nonexistent/kubeconfig",
    );
    expect(stderr).toContain("opstask controller: kubeconfig /nonexistent/kubeconfig cannot be read");
    expect(builtins).toContain("http");
    expect(builtins.filter((name) => name.includes("undici"))).toEqual([]);
  });

  it("main.ts knows every task command by name", () => {
    const quiet = { write: () => {}, isTTY: false };
    const commands = makeOpstaskCommands(() => ({
      stdout: quiet,
      stderr: quiet,
      env: {},
      program: "opstask",
    }));
    expect(Object.keys(commands).sort()).toEqual([...taskCommandNames].sort());
  });
});
