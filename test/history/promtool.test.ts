/**
 * Prometheus' own checker on deploy/monitoring: `promtool check rules` accepts the rules file, and
 * `promtool test rules` runs its unit tests (opstask-rules.test.yaml: snapshot age, failing
 * snapshots, a foreign writer's first write, a task past the phase deadline). promtool comes from
 * `scripts/testbin promtool` (scripts/test builds it); without it this test fails saying so.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { repoRoot } from "../support/cluster.ts";

const monitoring = join(repoRoot, "deploy", "monitoring");

/** The cached promtool's path (scripts/testbin --check names it whether or not it is built). */
const promtoolPath = (): string => {
  const result = spawnSync(join(repoRoot, "scripts", "testbin"), ["--check", "promtool"], {
    encoding: "utf8",
  });
  const line = result.stdout.split("\n").find((each) => each.startsWith("promtool="));
  if (line === undefined) throw new Error(`scripts/testbin --check promtool named no path: ${result.stderr}`);
  return line.slice("promtool=".length);
};

const run = (promtool: string, args: ReadonlyArray<string>) => {
  const result = spawnSync(promtool, args, { cwd: monitoring, encoding: "utf8" });
  return { code: result.status, out: `${result.stdout}${result.stderr}` };
};

describe("promtool accepts deploy/monitoring's rules", () => {
  let promtool: string;
  beforeAll(() => {
    promtool = promtoolPath();
    if (!existsSync(promtool))
      throw new Error(
        `promtool is not built (${promtool}): run scripts/testbin promtool (scripts/test does) and run this test again`,
      );
  });

  it("is Prometheus' promtool, at the version testbin/promtool pins", () => {
    expect(execFileSync(promtool, ["--version"], { encoding: "utf8" })).toMatch(
      /^promtool, version v0\.316\.0/,
    );
  });

  it("check rules: the rules file is valid", () => {
    const result = run(promtool, ["check", "rules", "opstask-rules.yaml"]);
    expect(result).toMatchObject({ code: 0 });
    expect(result.out).toMatch(/SUCCESS: \d+ rules found/);
  });

  it("test rules: the alerts fire when they should, with the labels and texts they should", () => {
    const result = run(promtool, ["test", "rules", "opstask-rules.test.yaml"]);
    expect(result.out).toContain("SUCCESS");
    expect(result.code).toBe(0);
  });

  it("rejects a broken rule (the check is not vacuous)", () => {
    const result = spawnSync(promtool, ["check", "rules", "/dev/stdin"], {
      input:
        "groups:\n  - name: g\n    rules:\n      - alert: Broken\n        expr: max by (namespace (opstask_leader)\n",
      encoding: "utf8",
    });
    expect(result.status).not.toBe(0);
    expect(`${result.stdout}${result.stderr}`).toMatch(/FAILED/);
  });
});
