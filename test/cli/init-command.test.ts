/**
 * `opstask init`: the names it is given become a project with none of the template's placeholders
 * left, a bad name is an option error naming the option and the fix, and it never writes over a
 * project. (test/package/tarball.test.ts installs and runs what it writes.)
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { opstaskDependency } from "../../src/cli/init/opstask-dependency.ts";
import { projectFiles } from "../../src/cli/init/project-files.ts";
import { pluralOf } from "../../src/cli/init/project-names.ts";
import { initCommand } from "../../src/cli/init-command.ts";
import { OptionError } from "../../src/cli/options.ts";
import { repoRoot } from "../support/cluster.ts";

mkdirSync(join(repoRoot, "tmp"), { recursive: true });
const dir = mkdtempSync(join(repoRoot, "tmp", "init-command-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const quietly = async (argv: ReadonlyArray<string>) => {
  const stdout = vi.spyOn(process.stdout, "write").mockImplementation(() => true);
  try {
    return await initCommand(argv);
  } finally {
    stdout.mockRestore();
  }
};
const optionError = (argv: ReadonlyArray<string>) =>
  quietly(argv).then(
    () => "no error",
    (error: unknown) =>
      error instanceof OptionError ? error.message : `not an option error: ${String(error)}`,
  );

describe("opstask init", () => {
  it("writes the project with the kind's names and no placeholder left", async () => {
    const target = join(dir, "probe-operator");
    expect(await quietly([target, "--kind", "BackupPolicy", "--group", "backups.example.org"])).toBe(0);
    const read = (path: string) => readFileSync(join(target, path), "utf8");
    const files = [
      "src/kind.ts",
      "src/handlers.ts",
      "src/main.ts",
      "test/simulate.test.ts",
      "test/cluster.test.ts",
    ];
    for (const file of [...files, "README.md", "tsconfig.json", "vitest.config.ts", ".gitignore"])
      expect({ file, placeholders: read(file).match(/__[A-Za-z]+__/g) }).toEqual({
        file,
        placeholders: null,
      });
    expect(read("src/kind.ts")).toContain('export const plural = "backuppolicies";');
    expect(read("src/kind.ts")).toContain('export const group = "backups.example.org";');
    expect(read("src/kind.ts")).toContain("export const backupPolicyKind = defineTaskKind({");
    expect(read("src/kind.ts")).toContain("  spec: BackupPolicySpec,\n");
    const manifest = JSON.parse(read("package.json"));
    expect(manifest).toMatchObject({ name: "probe-operator", type: "module" });
    expect(manifest.dependencies.opstask).toMatch(/^file:/);
    expect(manifest.scripts.deploy).toContain("--export backupPolicyKind");
    expect(Object.keys(manifest.devDependencies)).toEqual(
      expect.arrayContaining(["vitest", "fast-check", "typescript", "@kubernetes/client-node"]),
    );
    // The generated Dockerfile bundles with rolldown after `npm ci`; Node as opstask itself needs it.
    const own = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8"));
    expect(manifest.devDependencies.rolldown).toBe(own.peerDependencies.rolldown);
    expect(manifest.engines).toEqual({ node: own.engines.node });
  });

  it("takes opstask from a tarball path, copied into the project and named relatively", async () => {
    const tarball = join(dir, "opstask-9.9.9.tgz");
    writeFileSync(tarball, "packed");
    const target = join(dir, "from-tarball");
    expect(await quietly([target, "--opstask", tarball])).toBe(0);
    expect(JSON.parse(readFileSync(join(target, "package.json"), "utf8")).dependencies.opstask).toBe(
      "file:vendor/opstask-9.9.9.tgz",
    );
    expect(readFileSync(join(target, "vendor", "opstask-9.9.9.tgz"), "utf8")).toBe("packed");
  });

  describe("never from the npm registry, whose `opstask` is not this project's (issue 35, M9)", () => {
    it("refuses a version range or a registry name, naming the option and the fix, and writes nothing", async () => {
      for (const spec of ["^0.1.0", "latest", "opstask@0.1.0", "npm:opstask@^0.1.0"]) {
        const target = join(dir, "from-registry");
        expect(await optionError([target, "--opstask", spec])).toMatch(
          new RegExp(
            `^--opstask "${spec.replace(/[\^$.*+?()[\]{}|]/g, "\\$&")}": .*not this project's.*give the path of opstask's tarball`,
          ),
        );
        expect(readdirSync(dir)).not.toContain("from-registry");
      }
      expect(await optionError([join(dir, "missing"), "--opstask", join(dir, "none.tgz")])).toMatch(
        /no such file; give the path/,
      );
    });

    it("links a checkout, and by default this opstask's own directory (no tarball packed beside it)", async () => {
      const checkout = join(dir, "checkout");
      mkdirSync(checkout);
      writeFileSync(join(checkout, "package.json"), JSON.stringify({ name: "opstask", version: "0.1.0" }));
      const linked = join(dir, "from-checkout");
      expect(await quietly([linked, "--opstask", checkout])).toBe(0);
      expect(JSON.parse(readFileSync(join(linked, "package.json"), "utf8")).dependencies.opstask).toBe(
        `file:${checkout}`,
      );
      expect(await optionError([join(dir, "not-opstask"), "--opstask", dir])).toMatch(
        /not opstask's tarball/,
      );
      expect(opstaskDependency(undefined, "0.1.0", checkout)).toEqual({ spec: `file:${checkout}` });
      writeFileSync(join(checkout, "opstask-0.1.0.tgz"), "");
      expect(opstaskDependency(undefined, "0.1.0", checkout)).toEqual({
        spec: "file:vendor/opstask-0.1.0.tgz",
        copy: { from: join(checkout, "opstask-0.1.0.tgz"), to: "vendor/opstask-0.1.0.tgz" },
      });
    });

    it("tells to install with --ignore-scripts, in its output and the project's README", async () => {
      const target = join(dir, "install-line");
      const stdout = vi.spyOn(process.stdout, "write").mockImplementation(() => true);
      try {
        expect(await initCommand([target])).toBe(0);
        expect(stdout.mock.calls.join("")).toContain(
          `cd ${target} && npm install --ignore-scripts && npm test`,
        );
      } finally {
        stdout.mockRestore();
      }
      expect(readFileSync(join(target, "README.md"), "utf8")).toMatch(/^npm install --ignore-scripts/m);
    });
  });

  it("names the option and the fix for a bad name, and writes nothing", async () => {
    const target = join(dir, "bad");
    expect(await optionError([target, "--kind", "webhook"])).toBe(
      '--kind "webhook": give a PascalCase name such as Webhook',
    );
    expect(await optionError([target, "--group", "example"])).toBe(
      '--group "example": give a lower-case DNS name with at least one dot, such as ops.example.com',
    );
    expect(await optionError([target, "--version", "1.0"])).toMatch(
      /^--version "1\.0": give a Kubernetes API version/,
    );
    expect(await optionError([target, "--plural", "Web-Hooks"])).toMatch(
      /^--plural "Web-Hooks": give lower-case/,
    );
    expect(await optionError([join(dir, "Bad Name")])).toMatch(
      /^the directory's name \(or --name\) "Bad Name"/,
    );
    expect(await optionError([])).toMatch(/opstask init <dir>/);
    expect(await optionError([target, "--frobnicate"])).toMatch(/--frobnicate.*opstask init --help/);
    expect(readdirSync(dir)).not.toContain("bad");
  });

  it("never writes into a directory that holds anything", async () => {
    const target = join(dir, "taken");
    mkdirSync(target);
    writeFileSync(join(target, "main.ts"), "// mine");
    expect(await optionError([target])).toMatch(/is not empty: give a new or empty directory/);
    expect(readdirSync(target)).toEqual(["main.ts"]);
  });

  it("makes the plural by English's common rules", () => {
    expect(["Webhook", "Policy", "Patch", "Key", "Box"].map(pluralOf)).toEqual([
      "webhooks",
      "policies",
      "patches",
      "keys",
      "boxes",
    ]);
  });

  it("fails naming the package when opstask's manifest lacks a version it copies", async () => {
    const names = { name: "x", kind: "X", group: "a.b", version: "v1", plural: "xs" };
    await expect(
      projectFiles(names, { version: "1.0.0", engines: { node: ">=22.19" } }, "^1.0.0"),
    ).rejects.toThrow(/no version of effect/);
  });
});
