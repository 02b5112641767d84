/**
 * `opstask crd`: loads a module, prints the CRD its export holds, and says clearly what is wrong
 * with the module, the export or the schema.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { parse } from "yaml";
import { crdCommand } from "../../src/cli/crd-command.ts";
import { OptionError } from "../../src/cli/options.ts";
import { repoRoot } from "../support/cluster.ts";

mkdirSync(join(repoRoot, "tmp"), { recursive: true });
const dir = mkdtempSync(join(repoRoot, "tmp", "crd-command-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const taskCrdModule = join(repoRoot, "src", "library", "crd", "task-crd.ts");
const module = join(dir, "kinds.ts");
writeFileSync(
  module,
  `import * as Schema from "effect/Schema";
import { taskCrd } from ${JSON.stringify(taskCrdModule)};
const kind = { resource: { group: "ops.example.dev", version: "v1", kind: "Chore", plural: "chores" } };
export const good = taskCrd(kind, Schema.Struct({ target: Schema.String }));
export const bad = taskCrd(kind, Schema.Struct({ value: Schema.Union([Schema.String, Schema.Struct({ a: Schema.String })]) }));
export const notACrd = 42;
`,
);

describe("opstask crd", () => {
  it("writes the export's CRD as YAML", async () => {
    const output = join(dir, "crd.yaml");
    expect(await crdCommand(["--module", module, "--export", "good", "-o", output])).toBe(0);
    const crd = parse(readFileSync(output, "utf8"));
    expect(crd.metadata.name).toBe("chores.ops.example.dev");
    expect(crd.spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.target.type).toBe("string");
  });

  it("answers --help with its usage and exit 0, and an unknown flag with an option error, not a stack", async () => {
    const stdout = vi.spyOn(process.stdout, "write").mockImplementation(() => true);
    try {
      expect(await crdCommand(["--help"])).toBe(0);
      expect(String(stdout.mock.calls[0]?.[0])).toMatch(/^Usage: opstask crd --module <file>/);
    } finally {
      stdout.mockRestore();
    }
    await expect(crdCommand(["--bogus"])).rejects.toThrow(
      new OptionError("Unknown option '--bogus'; see 'opstask crd --help'"),
    );
  });

  it("requires --module", async () => {
    await expect(crdCommand([])).rejects.toThrow(OptionError);
  });

  it("names the exports a module has when --export is not one", async () => {
    await expect(crdCommand(["--module", module, "--export", "missing"])).rejects.toThrow(
      /has no such export \(it has: .*good/,
    );
  });

  it("exits 1 naming each schema part a CRD cannot express, or an export that is not a CRD", async () => {
    const stderr = vi.spyOn(process.stderr, "write").mockImplementation(() => true);
    try {
      expect(await crdCommand(["--module", module, "--export", "bad"])).toBe(1);
      expect(String(stderr.mock.calls[0]?.[0])).toContain("spec.value: a union of different shapes");
      expect(await crdCommand(["--module", module, "--export", "notACrd"])).toBe(1);
      expect(String(stderr.mock.calls[1]?.[0])).toContain("export notACrd is not an object");
    } finally {
      stderr.mockRestore();
    }
  });
});
