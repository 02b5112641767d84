/**
 * The task CLI an operator builds for its own kind (`taskCli` from `opstask/cli`): every command's
 * help and its argument errors speak of BackupVerifications and of the operator's program, not of
 * the flagship's EtcdOpsTask. (test/cli/task-cli-kinds.test.ts runs such a CLI against a cluster.)
 */
import { cliKindOf, kindCommands, type TaskIo, taskCli } from "opstask/cli";
import { describe, expect, it } from "vitest";
import { backupVerificationKind } from "./backup-verification.ts";

const program = "backup-verify";

const run = async (argv: ReadonlyArray<string>) => {
  const captured = { out: "", err: "" };
  const io: TaskIo = {
    stdout: {
      write: (text) => {
        captured.out += text;
      },
      isTTY: false,
    },
    stderr: {
      write: (text) => {
        captured.err += text;
      },
      isTTY: false,
    },
    env: {},
    program: "not this one",
  };
  const verifications = cliKindOf(backupVerificationKind, { groupHeader: "BACKUP" });
  const code = await taskCli([verifications], { program, io: () => io })(argv);
  return { code, ...captured };
};

const flagship = /etcd/i;

describe("the task CLI of the backup-verify operator", () => {
  it.each(kindCommands)("%s --help names the operator's kind and program, not etcd", async (command) => {
    const help = await run([command, "--help"]);
    expect(help).toMatchObject({ code: 0, err: "" });
    expect(help.out).toContain(`Usage: ${program} ${command} `);
    expect(help.out).toContain("backupverifications (BackupVerification)");
    expect(help.out).not.toMatch(flagship);
  });

  it("get --help names the kind's admission-group column", async () => {
    expect((await run(["get", "--help"])).out).toContain("the admission group (BACKUP)");
  });

  it("names the program and the kind in its errors, not etcd", async () => {
    const errors = [
      await run([]),
      await run(["verify"]),
      await run(["describe"]),
      await run(["get", "--kind", "backups"]),
      await run(["delete", "--bogus"]),
    ];
    for (const { code, out, err } of errors) {
      expect(code).toBe(2);
      expect(out).toBe("");
      expect(err).toContain(program);
      expect(err).not.toMatch(flagship);
    }
    expect(errors[3]?.err).toBe(
      `${program} get: unknown value "backups" for --kind: expected one of backupverifications (BackupVerification)\n`,
    );
  });
});
