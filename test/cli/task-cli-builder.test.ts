/**
 * Issue 27 point 8, the task CLI an operator builds (`taskCli`, `makeTaskCommands`): a list of its
 * commands, `create -f` for its own kind checked with the kind's decoder before anything is sent, its
 * own commands beside the task commands, and no EtcdOpsTask unless the caller names it. No cluster:
 * every case here ends before a kubeconfig is read (task-cli-kinds.test.ts creates on a real one).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, expectTypeOf, it } from "vitest";
import type { CliKind } from "../../src/cli/task/cli-kind.ts";
import { makeTaskCommands } from "../../src/cli/task/index.ts";
import type { TaskIo } from "../../src/cli/task/io.ts";
import { taskCli } from "../../src/cli/task/task-cli.ts";
import { probeCliKind } from "../support/probe-kind.ts";
import { captureTaskIo } from "../support/task-io.ts";

const dir = mkdtempSync(join(tmpdir(), "opstask-cli-builder-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const file = (name: string, text: string): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};
/** A kubeconfig that does not exist: a command that got as far as reading it would say so. */
const nowhere = ["--kubeconfig", join(dir, "no-kubeconfig")];

const run = async (argv: ReadonlyArray<string>, options: Parameters<typeof taskCli>[1] = {}) => {
  const { io, captured } = captureTaskIo({ program: "probe-cli" });
  const code = await taskCli([probeCliKind], { program: "probe-cli", io: () => io, ...options })(argv);
  return { code, ...captured };
};

const probeYaml = (spec: string) => `apiVersion: tests.opstask.dev/v1
kind: Probe
metadata:
  name: p1
spec:
${spec}`;

describe("taskCli's list of commands", () => {
  it("--help lists the task commands and the operator's own, with one line each", async () => {
    const help = await run(["--help"], {
      commands: { replay: { summary: "replay a finished probe", run: () => 0 } },
    });
    expect(help.code).toBe(0);
    expect(help.err).toBe("");
    expect(help.out).toContain("Usage: probe-cli <command> [arguments]\n");
    expect(help.out).toContain("Commands (tasks: probes (Probe)):\n");
    for (const command of ["get", "describe", "wait", "create", "delete", "cancel", "history", "replay"])
      expect(help.out).toMatch(new RegExp(`^  ${command} +\\S`, "m"));
    expect(help.out).toMatch(/^ {2}replay +replay a finished probe$/m);
    expect(help.out).not.toMatch(/etcd|snapshot|maintain/i);
  });

  it("without a command, or with an unknown one, lists the commands on stderr (exit 2)", async () => {
    for (const argv of [[], ["frobnicate"]]) {
      const result = await run(argv);
      expect(result.code).toBe(2);
      expect(result.out).toBe("");
      expect(result.err).toContain("Usage: probe-cli <command> [arguments]\n");
      expect(result.err).toMatch(/^ {2}create +create a task from a YAML or JSON file/m);
    }
    expect((await run(["frobnicate"])).err).toMatch(/^unknown command "frobnicate"\n/);
  });
});

describe("the operator's own commands", () => {
  it("run with the arguments after their name and the CLI's io; one named as a task command replaces it", async () => {
    const seen: Array<{ argv: ReadonlyArray<string>; program: string }> = [];
    const commands = {
      replay: {
        summary: "replay a finished probe",
        run: (
          argv: ReadonlyArray<string>,
          io: { program: string; stdout: { write(text: string): void } },
        ) => {
          seen.push({ argv, program: io.program });
          io.stdout.write("replayed\n");
          return 7;
        },
      },
      get: { summary: "our own get", run: () => 3 },
    };
    expect(await run(["replay", "p1", "--fast"], { commands })).toMatchObject({ code: 7, out: "replayed\n" });
    expect(seen).toEqual([{ argv: ["p1", "--fast"], program: "probe-cli" }]);
    expect((await run(["get"], { commands })).code).toBe(3);
  });
});

describe("create -f FILE", () => {
  it("checks the task with the kind's decoder before sending it: a mistake names the field (exit 2)", async () => {
    const misspelt = file(
      "misspelt.yaml",
      probeYaml("  tagret: host-a\n  ttlSecondsAfterFinished: 60\n  config: { ping: { answer: pong } }\n"),
    );
    const result = await run(["create", "-f", misspelt, ...nowhere]);
    expect(result).toEqual({
      code: 2,
      out: "",
      err: `probe-cli create: ${misspelt}: the Probe would be Rejected as invalid: spec.target: required field is missing\n`,
    });
    const badMember = file(
      "bad-member.json",
      JSON.stringify({
        metadata: { name: "p2" },
        spec: { target: "t", ttlSecondsAfterFinished: 60, config: { ping: { answer: 42 } } },
      }),
    );
    const member = await run(["create", "-f", badMember, ...nowhere]);
    expect(member.code).toBe(2);
    expect(member.err).toContain("spec.config.ping.answer: expected string, got 42");
  });

  it("a valid file gets as far as the cluster (here: a kubeconfig that does not exist)", async () => {
    const valid = file(
      "valid.yaml",
      probeYaml("  target: host-a\n  ttlSecondsAfterFinished: 60\n  config: { ping: { answer: pong } }\n"),
    );
    const result = await run(["create", "-f", valid, ...nowhere]);
    expect(result.code).toBe(2);
    expect(result.err).toContain("no-kubeconfig");
    expect(result.err).not.toContain("invalid");
  });

  it("refuses what is not one task of its kinds, naming the file and the fix", async () => {
    const cases: Array<[string, string, string]> = [
      ["two.yaml", `${probeYaml("  target: a\n")}---\n${probeYaml("  target: b\n")}`, "holds 2 documents"],
      [
        "other.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: { name: c }\n",
        'apiVersion "v1", kind "ConfigMap" is not a kind this command creates: expected tests.opstask.dev/v1 Probe',
      ],
      [
        "nameless.yaml",
        "metadata: {}\nspec: {}\n",
        "metadata.name is missing: name the task (or give metadata.generateName)",
      ],
      ["list.yaml", "- a\n- b\n", "expected one task object"],
      ["broken.yaml", "metadata: [\n", "is not YAML or JSON"],
    ];
    for (const [name, text, message] of cases) {
      const path = file(name, text);
      const result = await run(["create", "-f", path, ...nowhere]);
      expect({ name, code: result.code }).toEqual({ name, code: 2 });
      expect(result.err).toContain(`probe-cli create: ${path}`);
      expect(result.err).toContain(message);
    }
    const missing = await run(["create"]);
    expect(missing).toMatchObject({ code: 2 });
    expect(missing.err).toContain("missing -f FILE");
  });
});

describe("makeTaskCommands", () => {
  it("gives exactly the commands of the kinds it is given: no EtcdOpsTask snapshot or maintain", () => {
    const { io } = captureTaskIo();
    expect(Object.keys(makeTaskCommands(() => io, [probeCliKind])).sort()).toEqual([
      "cancel",
      "create",
      "delete",
      "describe",
      "get",
      "history",
      "wait",
    ]);
    // The kinds are required (nothing defaults to EtcdOpsTask), at least one: checked by the compiler.
    expectTypeOf<Parameters<typeof makeTaskCommands>>().toEqualTypeOf<
      [makeIo: () => TaskIo, kinds: readonly [CliKind, ...ReadonlyArray<CliKind>]]
    >();
  });
});
