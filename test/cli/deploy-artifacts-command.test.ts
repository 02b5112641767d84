/**
 * `opstask deploy-artifacts` writes a kind's deployment from its module, and the Deployment is the
 * flagship's where it should be: the same Node memory settings but `--jitless` (NODE_OPTIONS,
 * MALLOC_ARENA_MAX, and OPSTASK_V8_FLAGS' flags on the image's node command line), resources,
 * container security and probes as deploy/deployment.yaml; the operator's own variables with --env.
 * (test/integration/deploy-artifacts-rbac.test.ts runs its RBAC; test/package/tarball.test.ts runs a
 * scaffolded controller with exactly these settings.)
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { flagshipOnlyNodeOptions } from "../../src/cli/deploy/node-settings.ts";
import { deployArtifactsCommand } from "../../src/cli/deploy-artifacts-command.ts";
import { OptionError } from "../../src/cli/options.ts";
import { repoRoot } from "../support/cluster.ts";
import { deployedEnv, deployedNodeFlags } from "../support/deployed-env.ts";

const out = mkdtempSync(join(tmpdir(), "opstask-deploy-artifacts-"));
afterAll(() => rmSync(out, { recursive: true, force: true }));

type Container = Record<string, unknown> & { readonly env: ReadonlyArray<{ name: string; value?: string }> };
const containerOf = (text: string): Container => {
  const deployment = parseAllDocuments(text)
    .map(
      (document) =>
        document.toJS() as { kind?: string; spec?: { template: { spec: { containers: Container[] } } } },
    )
    .find((object) => object.kind === "Deployment");
  const container = deployment?.spec?.template.spec.containers[0];
  if (container === undefined) throw new Error("no Deployment container");
  return container;
};

/** The getting-started kind's module and export, as a project's `npm run deploy` names them. */
const greetingKind = [
  "--module",
  join(repoRoot, "examples", "getting-started", "greeting.ts"),
  "--export",
  "greetingKind",
];

/** Runs the command quietly; resolves to its exit code. */
const quietly = async (argv: ReadonlyArray<string>) => {
  const stdout = vi.spyOn(process.stdout, "write").mockReturnValue(true);
  try {
    return await deployArtifactsCommand(argv);
  } finally {
    stdout.mockRestore();
  }
};

describe("opstask deploy-artifacts", () => {
  it("writes the RBAC, ServiceAccount, namespace, Deployment, kustomization and Dockerfile of the kind", async () => {
    expect(await quietly([...greetingKind, "-o", out])).toBe(0);
    expect(readdirSync(out).sort()).toEqual([
      "Dockerfile",
      "deployment.yaml",
      "kustomization.yaml",
      "namespace.yaml",
      "rbac.yaml",
      "serviceaccount.yaml",
    ]);
    const clusterRole = parse(readFileSync(join(out, "rbac.yaml"), "utf8").split("\n---\n")[0] ?? "") as {
      rules: Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>;
    };
    expect(clusterRole.rules.slice(0, 2)).toEqual([
      {
        apiGroups: ["getting-started.opstask.dev"],
        resources: ["greetings"],
        verbs: ["list", "watch", "patch", "delete"],
      },
      { apiGroups: ["getting-started.opstask.dev"], resources: ["greetings/status"], verbs: ["patch"] },
    ]);
  });

  it("gives the Deployment the flagship's Node settings but --jitless, resources, container security and probes", () => {
    const generated = containerOf(readFileSync(join(out, "deployment.yaml"), "utf8"));
    const flagship = containerOf(readFileSync(join(repoRoot, "deploy", "deployment.yaml"), "utf8"));
    const env = Object.fromEntries(generated.env.map((variable) => [variable.name, variable.value]));
    const { NODE_OPTIONS, MALLOC_ARENA_MAX, OPSTASK_V8_FLAGS } = deployedEnv();
    // An operator's handlers may use WebAssembly (fetch parses HTTP with it), which --jitless turns off.
    const withoutJitless = (NODE_OPTIONS ?? "")
      .split(" ")
      .filter((flag) => !flagshipOnlyNodeOptions.includes(flag))
      .join(" ");
    expect(flagshipOnlyNodeOptions).toEqual(["--jitless"]);
    expect({ NODE_OPTIONS: env.NODE_OPTIONS, MALLOC_ARENA_MAX: env.MALLOC_ARENA_MAX }).toEqual({
      NODE_OPTIONS: withoutJitless,
      MALLOC_ARENA_MAX,
    });
    const entrypoint = /^ENTRYPOINT (.*)$/m.exec(readFileSync(join(out, "Dockerfile"), "utf8"))?.[1] ?? "[]";
    expect(JSON.parse(entrypoint)).toEqual([
      "/nodejs/bin/node",
      ...deployedNodeFlags(),
      ...(OPSTASK_V8_FLAGS ?? "").split(" "),
      "/app/dist/bundle/main.js",
    ]);
    for (const field of [
      "resources",
      "securityContext",
      "startupProbe",
      "livenessProbe",
      "readinessProbe",
      "ports",
    ])
      expect({ field, value: generated[field] }).toEqual({ field, value: flagship[field] });
  });

  it("adds the operator's --env variables to the container; one named NODE_OPTIONS replaces the generated one", async () => {
    const dir = join(out, "with-env");
    const code = await quietly([
      ...greetingKind,
      "-o",
      dir,
      "--env",
      "GREETING_STYLE=formal=yes",
      "--env",
      "NODE_OPTIONS=--jitless --max-old-space-size=96",
    ]);
    expect(code).toBe(0);
    const env = containerOf(readFileSync(join(dir, "deployment.yaml"), "utf8")).env;
    expect(env.filter((variable) => variable.name === "NODE_OPTIONS")).toEqual([
      { name: "NODE_OPTIONS", value: "--jitless --max-old-space-size=96" },
    ]);
    expect(env.slice(-2)).toEqual([
      { name: "GREETING_STYLE", value: "formal=yes" },
      { name: "NODE_OPTIONS", value: "--jitless --max-old-space-size=96" },
    ]);
    expect(env.map((variable) => variable.name)).toContain("LEADER_ELECTION_ID");
  });

  it("names the fix for an --env that is no NAME=VALUE, a bad name, a derived variable or a repeat", async () => {
    const refusal = (...env: ReadonlyArray<string>) =>
      deployArtifactsCommand([
        ...greetingKind,
        "-o",
        join(out, "refused"),
        ...env.flatMap((value) => ["--env", value]),
      ]).then(
        () => "accepted",
        (error: unknown) => (error instanceof OptionError ? error.message : String(error)),
      );
    expect(await refusal("DEBUG")).toBe("--env DEBUG: give NAME=VALUE (e.g. --env DEBUG=value)");
    expect(await refusal("1X=a")).toMatch(/^--env 1X=a: "1X" is not a valid variable name/);
    expect(await refusal("POD_NAMESPACE=x")).toMatch(
      /^--env POD_NAMESPACE: the Deployment sets it from --namespace/,
    );
    expect(await refusal("A=1", "A=2")).toBe("--env A: given twice; give it once");
    expect(readdirSync(out)).not.toContain("refused");
  });

  it("says what is wrong with an export that is not a kind, and with a missing --module", async () => {
    const stderr = vi.spyOn(process.stderr, "write").mockReturnValue(true);
    const code = await deployArtifactsCommand([
      "--module",
      join(repoRoot, "examples", "getting-started", "greeting.ts"),
      "--export",
      "crd",
      "-o",
      out,
    ]);
    const written = stderr.mock.calls.map((call) => String(call[0])).join("");
    stderr.mockRestore();
    expect(code).toBe(1);
    expect(written).toBe(
      "opstask deploy-artifacts: export crd is not a task kind (expected defineTaskKind(...)'s result)\n",
    );
    await expect(deployArtifactsCommand([])).rejects.toThrow(OptionError);
  });
});
