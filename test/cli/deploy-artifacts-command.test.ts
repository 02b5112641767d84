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
import {
  controllerDockerfile,
  DefaultRuntimeBase,
  isPinnedImage,
} from "../../src/cli/deploy/controller-dockerfile.ts";
import { deployArtifacts } from "../../src/cli/deploy/deploy-artifacts.ts";
import { flagshipOnlyNodeOptions } from "../../src/cli/deploy/node-settings.ts";
import { deployArtifactsCommand, kindOfExport } from "../../src/cli/deploy-artifacts-command.ts";
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

  it("with --schedules, grants the schedule controller's calls and writes the TaskSchedule CRD the package ships", async () => {
    const scheduled = join(out, "scheduled");
    expect(await quietly([...greetingKind, "--schedules", "-o", scheduled])).toBe(0);
    expect(readFileSync(join(scheduled, "taskschedules-crd.yaml"), "utf8").replace(/^#.*\n/, "")).toBe(
      readFileSync(
        join(repoRoot, "deploy", "crds", "opstask.gardener.cloud_taskschedules.yaml"),
        "utf8",
      ).replace(/^#.*\n/, ""),
    );
    const rulesOf = (dir: string) =>
      (
        parse(readFileSync(join(dir, "rbac.yaml"), "utf8").split("\n---\n")[0] ?? "") as {
          rules: Array<{ apiGroups: string[]; resources: string[]; verbs: string[] }>;
        }
      ).rules;
    const added = rulesOf(scheduled).filter(
      (rule) => !rulesOf(out).some((other) => JSON.stringify(other) === JSON.stringify(rule)),
    );
    expect(added).toEqual([
      { apiGroups: ["opstask.gardener.cloud"], resources: ["taskschedules"], verbs: ["list", "watch"] },
      { apiGroups: ["opstask.gardener.cloud"], resources: ["taskschedules/status"], verbs: ["patch"] },
      { apiGroups: ["getting-started.opstask.dev"], resources: ["greetings"], verbs: ["create"] },
    ]);
    expect(readdirSync(out)).not.toContain("taskschedules-crd.yaml");
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

  describe("generated RBAC and image without wildcards or floating bases (issue 35, L8)", () => {
    const resource = { group: "lookups.example.com", version: "v1", kind: "Lookup", plural: "lookups" };
    const documents = (text: string) => parseAllDocuments(text).map((document) => document.toJS() as unknown);

    it("refuses a kind whose rbacRules hold a wildcard, naming the rule's field and the fix", () => {
      const rule = { apiGroups: [""], resources: ["configmaps"], verbs: ["get"] };
      expect(kindOfExport({ resource, rbacRules: [rule, { ...rule, verbs: ["*"] }] }, "kind")).toEqual({
        error:
          'export kind: rbacRules[1].verbs: "*" grants every verb to whoever holds the controller\'s token; list the verbs the handlers use (e.g. ["get"])',
      });
      expect(
        kindOfExport({ resource, rbacRules: [{ ...rule, resources: ["pods/*"] }] }, "kind"),
      ).toMatchObject({
        error: expect.stringMatching(
          /^export kind: rbacRules\[0\]\.resources: "pods\/\*" grants every resource/,
        ),
      });
      expect(kindOfExport({ resource, rbacRules: [{ ...rule, apiGroups: ["*"] }] }, "kind")).toMatchObject({
        error: expect.stringMatching(/rbacRules\[0\]\.apiGroups: "\*" grants every API group/),
      });
      expect(kindOfExport({ resource, rbacRules: [rule] }, "kind")).toMatchObject({ rbacRules: [rule] });
    });

    it("binds the rules by a RoleBinding per watched namespace, and tells the controller which", () => {
      const files = deployArtifacts(
        { resource },
        { regenerate: "test", watchNamespaces: ["team-a", "team-b"] },
      );
      const text = (path: string) => files.find((file) => file.path === path)?.text ?? "";
      const rbac = documents(text("rbac.yaml")) as Array<{
        kind: string;
        metadata: { name: string; namespace?: string };
        roleRef?: { name: string };
        rules?: Array<{ resources: string[] }>;
      }>;
      const bindings = rbac.filter((object) => object.kind.endsWith("Binding"));
      expect(
        bindings.map((b) => `${b.kind} ${b.metadata.namespace ?? ""} ${b.roleRef?.name}`).sort(),
      ).toEqual([
        "ClusterRoleBinding  lookups-controller-metrics-auth",
        "RoleBinding lookups-system lookups-controller-leader-election",
        "RoleBinding lookups-system lookups-controller-task-records",
        "RoleBinding team-a lookups-controller",
        "RoleBinding team-b lookups-controller",
      ]);
      const metricsAuth = rbac.find((object) => object.metadata.name === "lookups-controller-metrics-auth");
      expect(metricsAuth?.rules?.flatMap((rule) => rule.resources)).toEqual([
        "tokenreviews",
        "subjectaccessreviews",
      ]);
      expect(containerOf(text("deployment.yaml")).env).toContainEqual({
        name: "WATCH_NAMESPACES",
        value: "team-a,team-b",
      });
      const defaults = documents(
        deployArtifacts({ resource }, { regenerate: "test" }).find((file) => file.path === "rbac.yaml")
          ?.text ?? "",
      ) as Array<{ kind: string }>;
      expect(defaults.filter((object) => object.kind === "ClusterRoleBinding")).toHaveLength(1);
    });

    it("refuses a --watch-namespaces value that is not namespaces, and a base image by a tag that moves", async () => {
      const greeting = join(repoRoot, "examples", "getting-started", "greeting.ts");
      const args = ["--module", greeting, "--export", "greetingKind", "-o", out];
      await expect(deployArtifactsCommand([...args, "--watch-namespaces", "team-a,Team B"])).rejects.toThrow(
        /--watch-namespaces "team-a,Team B": "Team B" is not a namespace name; give lower-case DNS labels/,
      );
      await expect(deployArtifactsCommand([...args, "--runtime-base", DefaultRuntimeBase])).rejects.toThrow(
        /--runtime-base .*: a tag that can move; give the image by digest/,
      );
      await expect(
        deployArtifactsCommand([...args, "--build-base", "node:24-bookworm-slim"]),
      ).rejects.toThrow(/--build-base node:24-bookworm-slim: a tag that can move/);
    });

    it("builds on an exact Node release, opstask's own, and on a runtime base given by digest", async () => {
      const ownBase = /^ARG BUILD_BASE=(.*)$/m.exec(readFileSync(join(repoRoot, "Dockerfile"), "utf8"))?.[1];
      const pinned = `${DefaultRuntimeBase}@sha256:${"a".repeat(64)}`;
      const dockerfile = controllerDockerfile("src/main.ts", { runtime: pinned });
      expect(/^ARG BUILD_BASE=(.*)$/m.exec(dockerfile)?.[1]).toBe(ownBase);
      expect(isPinnedImage(ownBase ?? "")).toBe(true);
      expect(dockerfile).toContain(`ARG RUNTIME_BASE=${pinned}\n`);
      expect(controllerDockerfile("src/main.ts")).toContain(
        `--runtime-base ${DefaultRuntimeBase}@sha256:<digest>`,
      );
    });
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
