/**
 * `opstask completion bash`: it offers every command `opstask --help` lists, only flags each command's
 * --help documents, and `schedule`'s verbs and `-o` values, as bash itself completes them.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { bashCompletion, completionCommands, completionFlags } from "../../src/cli/completion-command.ts";
import { repoRoot } from "../support/cluster.ts";

const opstask = (args: ReadonlyArray<string>) => {
  const result = spawnSync(process.execPath, [join(repoRoot, "src", "cli", "main.ts"), ...args], {
    encoding: "utf8",
    timeout: 60_000,
    env: { ...process.env, KUBECONFIG: "/nonexistent" },
  });
  return { code: result.status, out: result.stdout, err: result.stderr };
};

/** What bash completes for `words` (the last one being typed), with the script loaded. */
const complete = (words: ReadonlyArray<string>): string[] => {
  const script = `${bashCompletion("opstask")}
COMP_WORDS=(${words.map((word) => `'${word}'`).join(" ")})
COMP_CWORD=${words.length - 1}
_opstask
printf '%s\\n' "\${COMPREPLY[@]}"`;
  const result = spawnSync("bash", ["-c", script], { encoding: "utf8", timeout: 10_000 });
  expect(result.stderr).toBe("");
  return result.stdout.split("\n").filter((line) => line !== "");
};

describe("opstask completion", () => {
  it("offers every command opstask --help lists", () => {
    const help = opstask(["--help"]);
    expect(help.code).toBe(0);
    const listed = [...help.out.matchAll(/^ {2}([a-z][a-z-]*) {2,}/gm)].map((match) => match[1]);
    expect(listed).toContain("schedule");
    expect([...completionCommands].sort()).toEqual([...listed, "help"].sort());
  });

  it("offers for each command only flags its --help documents", () => {
    expect(Object.keys(completionFlags)).toEqual(
      expect.arrayContaining(["schedule", "history", "recover-quorum"]),
    );
    for (const [command, flags] of Object.entries(completionFlags)) {
      const help = opstask([command, "--help"]);
      expect({ command, code: help.code }).toEqual({ command, code: 0 });
      for (const flag of flags)
        expect({ command, flag, documented: help.out.includes(flag) }).toMatchObject({
          documented: true,
        });
    }
  }, 120_000);

  it("completes schedule, its verbs, its flags and its -o values in bash", () => {
    expect(complete(["opstask", "sch"])).toEqual(["schedule"]);
    expect(complete(["opstask", "schedule", ""])).toEqual([
      "create",
      "get",
      "describe",
      "suspend",
      "resume",
      "trigger",
    ]);
    expect(complete(["opstask", "schedule", "get", "-o", ""])).toEqual(["json", "yaml"]);
    expect(complete(["opstask", "schedule", "get", "--"])).toEqual([
      "--kubeconfig",
      "--context",
      "--namespace",
      "--help",
    ]);
    expect(complete(["opstask", "hist"])).toEqual(["history"]);
    expect(complete(["opstask", "recover"])).toEqual(["recover-quorum"]);
  });
});
