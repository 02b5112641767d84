/**
 * The library as an operator author gets it: `npm pack`, install the tarball into a fresh project
 * (npm's cache first), then with the getting-started operator (examples/getting-started, the code of
 * docs/library.md):
 * - type-check it under strict with skipLibCheck off (the package's .d.ts must stand on their own);
 * - check the library's entries load no CLI-only code or dependency, and the source maps resolve;
 * - run its own task CLI (`opstask/cli`, a separate entry that may load CLI code);
 * - run it in simulation (`opstask/testing`);
 * - generate its CRD with the installed `opstask crd`, and run it against a real kube-apiserver.
 * And examples/backup-verify as its own project would hold it: type-checked against the installed
 * package, and its real-API-server test run with vitest through `opstask/testing`'s control plane
 * (which builds nothing here: the binaries are in the shared cache).
 * Last, a project written by the installed `opstask init`: a second config member added in the three
 * places its README names, its own tests run (simulate() property, real kube-apiserver), then its
 * controller as its generated Dockerfile and Deployment run it (bundled, their node flags and env, the
 * generated RBAC) under kubectl: `kubectl wait --for=condition=Succeeded` and status.result.
 */
import { execFile, spawn } from "node:child_process";
import { copyFileSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { promisify, stripVTControlCharacters } from "node:util";
import { CustomObjectsApi } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { createTestNamespace, repoRoot, useControlPlane } from "../support/cluster.ts";
import { waitFor } from "../support/wait.ts";
import { importGraph, packageName } from "./import-graph.ts";

const run = promisify(execFile);
const manifest = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as {
  readonly version: string;
  readonly devDependencies: Record<string, string>;
};
const exampleFiles = ["greeting.ts", "handlers.ts", "simulation.ts", "main.ts", "cli.ts"];
/** examples/backup-verify, copied whole: it imports only the package's public entries. */
const backupVerify = join(repoRoot, "examples", "backup-verify");
const libraryEntries = ["index.js", "advanced.js", "testing.js", "crd.js"];
/** Packages only CLI commands use; a library user must not load them. */
const cliOnlyPackages = ["@statelyai/inspect", "ws"];
/**
 * Optional peers a library feature may load on demand (the task board draws the machine with
 * Graphviz): never imported statically, so a library user without them loads nothing of them.
 */
const onDemandPackages = ["@viz-js/viz"];
const cliOnlyFolders = ["cli", "devcluster", "inspect"];
/** `opstask/testing` loads the local control plane only when `startControlPlane` is called. */
const onDemandFolders = new Map([["testing.js", ["devcluster"]]]);

const work = mkdtempSync(join(tmpdir(), "opstask-tarball-"));
const project = join(work, "greeting-operator");
const tarball = join(work, `opstask-${manifest.version}.tgz`);
const installed = join(project, "node_modules", "opstask");

const projectTsconfig = {
  compilerOptions: {
    target: "es2023",
    module: "nodenext",
    moduleResolution: "nodenext",
    strict: true,
    skipLibCheck: false,
    noEmit: true,
    allowImportingTsExtensions: true,
    verbatimModuleSyntax: true,
    types: ["node"],
  },
  include: ["*.ts", "backup-verify/*.ts"],
};

beforeAll(async () => {
  await run("npm", ["pack", "--silent", "--pack-destination", work], {
    cwd: repoRoot,
    timeout: 180_000,
    maxBuffer: 16 << 20,
  });
  await run("mkdir", [project]);
  writeFileSync(
    join(project, "package.json"),
    JSON.stringify({ name: "greeting-operator", private: true, type: "module" }),
  );
  writeFileSync(join(project, "tsconfig.json"), JSON.stringify(projectTsconfig));
  for (const file of exampleFiles) {
    copyFileSync(join(repoRoot, "examples", "getting-started", file), join(project, file));
  }
  cpSync(backupVerify, join(project, "backup-verify"), { recursive: true });
  // What an operator's project adds to test on a real API server: vitest, and client-node, which
  // startControlPlane loads.
  const devDependencies = ["@types/node", "vitest", "@kubernetes/client-node"].map(
    (name) => `${name}@${manifest.devDependencies[name]}`,
  );
  await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", tarball, ...devDependencies], {
    cwd: project,
    timeout: 240_000,
    maxBuffer: 16 << 20,
  });
}, 480_000);

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("the packed library in a fresh project", () => {
  it("type-checks the getting-started and backup-verify operators under strict with skipLibCheck off", async () => {
    const tsc = join(repoRoot, "node_modules", ".bin", "tsc");
    const result = await run(tsc, ["-p", project], { cwd: project, timeout: 120_000 }).catch(
      (error: { readonly stdout?: string }) => ({ stdout: error.stdout ?? String(error) }),
    );
    expect(result.stdout).toBe("");
  });

  it("loads no CLI-only code or dependency from opstask, opstask/advanced, opstask/testing or opstask/crd", () => {
    const graph = importGraph(libraryEntries.map((entry) => join(installed, "dist", entry)));
    const packages = [...graph.packages.keys()].map(packageName);
    expect(packages.filter((name) => cliOnlyPackages.includes(name))).toEqual([]);
    const loadedAtOnce = [...graph.staticPackages].map(packageName);
    expect(loadedAtOnce.filter((name) => onDemandPackages.includes(name))).toEqual([]);
    const folderOf = (file: string) => file.slice(join(installed, "dist").length + 1).split("/")[0] ?? "";
    const atOnce = [...graph.staticFiles].map(folderOf);
    expect(atOnce.filter((folder) => cliOnlyFolders.includes(folder))).toEqual([]);
    for (const entry of libraryEntries) {
      const allowed = onDemandFolders.get(entry) ?? [];
      const reached = [...importGraph([join(installed, "dist", entry)]).files].map(folderOf);
      expect({
        entry,
        cliOnly: reached.filter((f) => cliOnlyFolders.includes(f) && !allowed.includes(f)),
      }).toEqual({
        entry,
        cliOnly: [],
      });
    }
    expect(new Set([...graph.files].map(folderOf))).toContain("devcluster");
    // The graph was walked: the library's own dependencies are there.
    expect(new Set(packages)).toContain("effect");
  });

  it("keeps opstask/cli a separate entry whose files are all shipped", () => {
    const library = importGraph(libraryEntries.map((entry) => join(installed, "dist", entry)));
    expect([...library.files].filter((file) => file.endsWith(join("dist", "cli.js")))).toEqual([]);
    const cli = importGraph([join(installed, "dist", "cli.js")]);
    expect([...cli.files].filter((file) => !existsSync(file))).toEqual([]);
    expect([...cli.files].some((file) => file.includes(join("dist", "cli", "task")))).toBe(true);
  });

  it("gives the operator get/describe/wait/delete for its own kind (opstask/cli)", async () => {
    const help = await run(process.execPath, ["cli.ts", "describe", "--help"], {
      cwd: project,
      timeout: 60_000,
    });
    // The operator's own program and kind, not opstask's EtcdOpsTask.
    expect(help.stdout).toMatch(/^Usage: node cli\.ts describe /);
    expect(help.stdout).toContain("greetings (Greeting)");
    expect(help.stdout).not.toMatch(/etcd/i);
    const unknown = await run(process.execPath, ["cli.ts", "frobnicate"], {
      cwd: project,
      timeout: 60_000,
    }).then(
      () => ({ code: 0, stderr: "" }),
      (error: { readonly code?: number; readonly stderr?: string }) => ({
        code: error.code,
        stderr: error.stderr ?? "",
      }),
    );
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^unknown command "frobnicate"\n\nUsage: node cli\.ts /);
    for (const command of ["get", "describe", "wait", "delete", "create"])
      expect(unknown.stderr).toMatch(new RegExp(`^  ${command} `, "m"));
  });

  it("ships the sources its source maps name", () => {
    const graph = importGraph(libraryEntries.map((entry) => join(installed, "dist", entry)));
    const missing = [...graph.files].flatMap((file) => {
      const map = JSON.parse(readFileSync(`${file}.map`, "utf8")) as {
        readonly sources: ReadonlyArray<string>;
      };
      return map.sources
        .map((source) => resolve(dirname(file), source))
        .filter((source) => !existsSync(source));
    });
    expect(missing).toEqual([]);
  });

  it("names the optional package a CLI command needs when it is not installed", async () => {
    const opstask = join(project, "node_modules", ".bin", "opstask");
    // Drawing the machine as SVG needs Graphviz (@viz-js/viz), which the library does not install.
    const result = await run(opstask, ["machine", "--format", "svg"], { cwd: project, timeout: 60_000 }).then(
      () => ({ stderr: "exited 0" }),
      (error: { readonly stderr?: string }) => ({ stderr: error.stderr ?? String(error) }),
    );
    expect(result.stderr).toBe(
      "opstask machine needs the optional package @viz-js/viz: npm install @viz-js/viz\n",
    );
  });

  it("writes the operator's deployment with the installed opstask deploy-artifacts", async () => {
    const opstask = join(project, "node_modules", ".bin", "opstask");
    const { stdout } = await run(
      opstask,
      ["deploy-artifacts", "--module", "greeting.ts", "--export", "greetingKind", "-o", "deploy"],
      { cwd: project, timeout: 60_000 },
    );
    expect(stdout.trim().split("\n").sort()).toEqual(
      [
        "Dockerfile",
        "deployment.yaml",
        "kustomization.yaml",
        "namespace.yaml",
        "rbac.yaml",
        "serviceaccount.yaml",
      ].map((file) => join("deploy", file)),
    );
    expect(readFileSync(join(project, "deploy", "rbac.yaml"), "utf8")).toContain("- greetings/status");
  });

  it("runs the operator in simulation", async () => {
    const { stdout } = await run(process.execPath, ["simulation.ts"], { cwd: project, timeout: 60_000 });
    expect(JSON.parse(stdout)).toEqual({
      states: { hi: "Succeeded", "bad-sum": "Failed", unknown: "Rejected" },
      description: "Hello, Ada!",
      remaining: [],
    });
  });
});

describe("the packed library against a real kube-apiserver", () => {
  const cluster = useControlPlane();
  const resource = { group: "getting-started.opstask.dev", version: "v1alpha1", plural: "greetings" };

  const apiVersion = `${resource.group}/${resource.version}`;

  // The CRD as a user makes it: printed by the installed `opstask crd` from their module.
  beforeAll(async () => {
    const crdFile = join(project, "crd.yaml");
    const opstask = join(project, "node_modules", ".bin", "opstask");
    await run(opstask, ["crd", "--module", "greeting.ts", "--export", "crd", "-o", crdFile], {
      cwd: project,
      timeout: 60_000,
    });
    await cluster().applyCrds([crdFile]);
  }, 120_000);

  it("enforces the generated CRD's rules: exactly one member, defaults, immutable spec", async () => {
    const kc = cluster().makeKubeConfig();
    const namespace = await createTestNamespace(kc, "greeting-rules");
    const api = kc.makeApiClient(CustomObjectsApi);
    const refusal = (promise: Promise<unknown>) =>
      promise.then(
        () => "accepted",
        (error: unknown) => String(error),
      );
    const twoMembers = {
      apiVersion,
      kind: "Greeting",
      metadata: { name: "two" },
      spec: { config: { hello: { name: "Ada" }, sum: { numbers: [1], expected: 1 } } },
    };
    expect(
      await refusal(api.createNamespacedCustomObject({ ...resource, namespace, body: twoMembers })),
    ).toMatch(/spec\.config: Too many: 2: must have at most 1 item/);
    const created = (await api.createNamespacedCustomObject({
      ...resource,
      namespace,
      body: {
        apiVersion,
        kind: "Greeting",
        metadata: { name: "one" },
        spec: { config: { hello: { name: "Ada" } } },
      },
    })) as { readonly spec: { readonly ttlSecondsAfterFinished: number } };
    expect(created.spec.ttlSecondsAfterFinished).toBe(600);
    const edit = api.patchNamespacedCustomObject({
      ...resource,
      namespace,
      name: "one",
      body: [{ op: "replace", path: "/spec/config/hello/name", value: "Grace" }],
    });
    expect(await refusal(edit)).toMatch(/config is immutable/);
  });

  it("runs a Greeting to Succeeded", async () => {
    const plane = cluster();
    const kc = plane.makeKubeConfig();
    const namespace = await createTestNamespace(kc, "greeting");
    const operator = spawn(process.execPath, ["main.ts"], {
      cwd: project,
      env: { ...process.env, KUBECONFIG: plane.kubeconfigPath },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    operator.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    operator.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((done) => operator.once("exit", (code) => done(code)));
    try {
      const api = kc.makeApiClient(CustomObjectsApi);
      const body = {
        apiVersion: `${resource.group}/${resource.version}`,
        kind: "Greeting",
        metadata: { name: "hi" },
        spec: { config: { hello: { name: "Ada" } } },
      };
      await api.createNamespacedCustomObject({ ...resource, namespace, body });
      const status = await waitFor(
        "Greeting hi to succeed",
        async () => {
          const object = (await api.getNamespacedCustomObject({ ...resource, namespace, name: "hi" })) as {
            readonly status?: {
              readonly state?: string;
              readonly lastOperation?: { readonly description?: string };
            };
          };
          return object.status?.state === "Succeeded" ? object.status : undefined;
        },
        60_000,
      ).catch((error: unknown) => Promise.reject(new Error(`${String(error)}; operator output:\n${output}`)));
      expect(status.lastOperation?.description).toBe("Hello, Ada!");
    } finally {
      operator.kill("SIGTERM");
    }
    expect(await exited).toBe(0);
  });
});

describe("an example's own real-API-server test through opstask/testing", () => {
  it("runs examples/backup-verify/verify.integration.test.ts with the installed package", async () => {
    const vitest = join(project, "node_modules", ".bin", "vitest");
    const result = await run(vitest, ["run", "backup-verify/verify.integration.test.ts"], {
      cwd: project,
      timeout: 300_000,
      maxBuffer: 16 << 20,
      env: {
        ...process.env,
        VITEST_POOL_ID: undefined,
        VITEST_WORKER_ID: undefined,
        NODE_OPTIONS: undefined,
      },
    }).then(
      ({ stdout }) => stripVTControlCharacters(stdout),
      (error: { readonly stdout?: string; readonly stderr?: string }) =>
        stripVTControlCharacters(`${error.stdout ?? ""}\n${error.stderr ?? String(error)}`),
    );
    expect(result).toMatch(/Tests\s+8 passed/);
    expect(result).not.toMatch(/failed/);
  }, 320_000);
});

/**
 * How the generated image runs the controller, read from the project's deploy/: the Dockerfile's
 * bundle step and ENTRYPOINT (its node flags, the bundle under /app), and the Deployment's container
 * env (a fieldRef to the pod's namespace resolved as the kubelet does).
 */
const generatedImage = (project: string) => {
  const dockerfile = readFileSync(join(project, "deploy", "Dockerfile"), "utf8");
  const bundle = /^RUN npx (opstask bundle .*)$/m.exec(dockerfile)?.[1]?.split(" ");
  const entrypoint = /^ENTRYPOINT (\[.*\])$/m.exec(dockerfile)?.[1];
  if (bundle === undefined || entrypoint === undefined)
    throw new Error(`no bundle step or ENTRYPOINT in:\n${dockerfile}`);
  const [, ...args] = JSON.parse(entrypoint) as ReadonlyArray<string>;
  const deployment = parseAllDocuments(readFileSync(join(project, "deploy", "deployment.yaml"), "utf8"))
    .map((document) => document.toJS() as GeneratedDeployment)
    .find((object) => object.kind === "Deployment");
  const container = deployment?.spec.template.spec.containers[0];
  if (deployment === undefined || container === undefined)
    throw new Error("no Deployment in deploy/deployment.yaml");
  const env = Object.fromEntries(
    container.env.map(({ name, value, valueFrom }) => {
      if (value !== undefined) return [name, value];
      if (valueFrom?.fieldRef?.fieldPath === "metadata.namespace")
        return [name, deployment.metadata.namespace];
      throw new Error(`env ${name}: no value this test can give`);
    }),
  );
  return { bundle, args: args.map((arg) => arg.replace(/^\/app\//, "")), env };
};

interface GeneratedDeployment {
  readonly kind: string;
  readonly metadata: { readonly namespace: string };
  readonly spec: {
    readonly template: {
      readonly spec: {
        readonly containers: ReadonlyArray<{
          readonly env: ReadonlyArray<{
            readonly name: string;
            readonly value?: string;
            readonly valueFrom?: { readonly fieldRef?: { readonly fieldPath?: string } };
          }>;
        }>;
      };
    };
  };
}

/** What a failed child process said, for the assertion message (vitest prints it whole). */
const outputOf = (error: { readonly stdout?: string; readonly stderr?: string }) =>
  stripVTControlCharacters(`${error.stdout ?? ""}\n${error.stderr ?? String(error)}`);

describe("a project written by opstask init", () => {
  const scaffold = join(work, "webhook-operator");
  /** Runs a command in the scaffolded project; resolves to its output, rejects with all of it. */
  const inScaffold = (
    command: string,
    args: ReadonlyArray<string>,
    options: { readonly timeout: number; readonly env?: NodeJS.ProcessEnv },
  ) =>
    run(command, [...args], {
      cwd: scaffold,
      maxBuffer: 16 << 20,
      timeout: options.timeout,
      env: {
        ...process.env,
        VITEST_POOL_ID: undefined,
        VITEST_WORKER_ID: undefined,
        NODE_OPTIONS: undefined,
        ...options.env,
      },
    }).then(
      ({ stdout }) => stripVTControlCharacters(stdout),
      (error: { readonly stdout?: string; readonly stderr?: string }) =>
        Promise.reject(new Error(outputOf(error))),
    );
  const edit = (file: string, anchor: string, replacement: string) => {
    const path = join(scaffold, file);
    const text = readFileSync(path, "utf8");
    // A template change that moves the anchor must fail here, not pass with the member missing.
    expect(text.split(anchor)).toHaveLength(2);
    writeFileSync(path, text.replace(anchor, replacement));
  };

  beforeAll(async () => {
    // `npx opstask init` as an author runs it: the installed package's bin, opstask from the tarball.
    const written = await run(
      join(installed, "..", ".bin", "opstask"),
      ["init", scaffold, "--opstask", tarball],
      {
        cwd: work,
        timeout: 60_000,
      },
    );
    expect(written.stdout).toContain("three places");
    // As its README says: no package's install scripts run.
    await inScaffold("npm", ["install", "--ignore-scripts", "--prefer-offline", "--no-audit", "--no-fund"], {
      timeout: 300_000,
    });
    expect(JSON.parse(readFileSync(join(scaffold, "package.json"), "utf8")).dependencies.opstask).toBe(
      `file:vendor/opstask-${manifest.version}.tgz`,
    );
  }, 360_000);

  it("takes a second config member in the three places its README names, the compiler holding it to them", async () => {
    expect(readFileSync(join(scaffold, "README.md"), "utf8")).toMatch(
      /three places[\s\S]*src\/kind\.ts[\s\S]*src\/handlers\.ts[\s\S]*test\/simulate\.test\.ts/,
    );
    // 1. The schema.
    edit("src/kind.ts", "configUnion({ http: Http },", "configUnion({ http: Http, shout: Shout },");
    edit(
      "src/kind.ts",
      "/** The config members:",
      "export const Shout = Schema.Struct({ text: Schema.String.check(Schema.isNonEmpty()) });\n\n/** The config members:",
    );
    // Without its handler the project does not compile, and the error names the member.
    const missing = await inScaffold("npm", ["run", "--silent", "typecheck"], { timeout: 120_000 }).then(
      () => "compiled",
      (error: unknown) => String(error),
    );
    expect(missing).toMatch(/shout/);
    // 2. The handler.
    edit(
      "src/handlers.ts",
      "    }),\n  });\n\nexport const handlers",
      [
        "    }),",
        "    shout: promiseHandler({",
        "      execute: (_task, { config }) =>",
        "        webhookKind.succeeded({ description: config.text.toUpperCase(), result: {} }),",
        "    }),",
        "  });",
        "",
        "export const handlers",
      ].join("\n"),
    );
    // 3. The generator of the simulation property.
    edit(
      "test/simulate.test.ts",
      "const members: ReadonlyArray<fc.Arbitrary<(index: number) => Case>> = [",
      [
        "const members: ReadonlyArray<fc.Arbitrary<(index: number) => Case>> = [",
        '  fc.string({ minLength: 1, maxLength: 8 }).map((text) => (): Case => ({ config: { shout: { text } }, expected: "Succeeded", result: {} })),',
      ].join("\n"),
    );
    expect(await inScaffold("npm", ["run", "--silent", "typecheck"], { timeout: 120_000 })).toBe("");
  }, 300_000);

  it("takes a multi-step member whose last step returns the result", async () => {
    edit(
      "src/kind.ts",
      "configUnion({ http: Http, shout: Shout },",
      "configUnion({ http: Http, shout: Shout, count: Count },",
    );
    edit(
      "src/kind.ts",
      "/** The config members:",
      "export const Count = Schema.Struct({ label: Schema.String });\n\n/** The config members:",
    );
    edit(
      "src/kind.ts",
      "export const WebhookResult = Schema.Struct({",
      "export const WebhookResult = Schema.Struct({\n  counted: Schema.optionalKey(Schema.Number.check(Schema.isInt32())),",
    );
    edit(
      "src/handlers.ts",
      'import { completed, failed, memberHandlers, promiseHandler, retry } from "opstask";',
      'import { completed, failed, memberHandlers, promiseHandler, promiseStep, retry, stepsHandler } from "opstask";',
    );
    edit(
      "src/handlers.ts",
      "  });\n\nexport const handlers",
      [
        "    count: stepsHandler(webhookKind, {",
        '      progress: "ops.example.com/count",',
        "      steps: [",
        '        promiseStep({ name: "Start", run: async () => undefined }),',
        "        promiseStep({",
        '          name: "Finish",',
        "          run: async () => {",
        '            return webhookKind.succeeded({ description: "Counted", result: { counted: 2 } });',
        "          },",
        "        }),",
        "      ],",
        "    }),",
        "  });",
        "",
        "export const handlers",
      ].join("\n"),
    );
    edit(
      "test/simulate.test.ts",
      "const members: ReadonlyArray<fc.Arbitrary<(index: number) => Case>> = [",
      [
        "const members: ReadonlyArray<fc.Arbitrary<(index: number) => Case>> = [",
        '  fc.string({ maxLength: 8 }).map((label) => (): Case => ({ config: { count: { label } }, expected: "Succeeded", result: { counted: 2 } })),',
      ].join("\n"),
    );
    expect(await inScaffold("npm", ["run", "--silent", "typecheck"], { timeout: 120_000 })).toBe("");
  }, 300_000);

  it("passes its own tests: the simulate() property and the real-kube-apiserver test", async () => {
    const result = await inScaffold("npm", ["test"], { timeout: 300_000 });
    expect(result).toMatch(/Test Files\s+2 passed/);
    expect(result).toMatch(/Tests\s+5 passed/);
    expect(result).not.toMatch(/failed|skipped/);
  }, 320_000);

  describe("under kubectl", () => {
    const cluster = useControlPlane();

    it("runs the bundled controller with the generated Deployment's node flags, env and RBAC: kubectl wait --for=condition=Succeeded, status.result", async () => {
      await inScaffold("npm", ["run", "--silent", "crd"], { timeout: 60_000 });
      const files = await inScaffold("npm", ["run", "--silent", "deploy"], { timeout: 60_000 });
      expect(files).toContain("deploy/rbac.yaml");
      expect(readFileSync(join(scaffold, "crd.yaml"), "utf8")).toMatch(/^\s+shout:$/m);
      const plane = cluster();
      await plane.applyCrds([join(scaffold, "crd.yaml")]);
      const namespace = await createTestNamespace(plane.makeKubeConfig(), "scaffold");
      const env = { KUBECONFIG: plane.kubeconfigPath };
      const kubectl = (...args: ReadonlyArray<string>) =>
        inScaffold("kubectl", ["-n", namespace, ...args], { timeout: 90_000, env });
      // The controller runs as the Deployment runs it: the generated ServiceAccount and RBAC only,
      // leader election in its namespace, probes and secure metrics (on free ports here).
      for (const file of ["namespace.yaml", "serviceaccount.yaml", "rbac.yaml"])
        await inScaffold("kubectl", ["apply", "--server-side", "-f", join("deploy", file)], {
          timeout: 90_000,
          env,
        });
      const token = await plane.serviceAccountToken("webhooks-system", "webhooks-controller");
      const controllerKubeconfig = join(scaffold, "controller.kubeconfig");
      writeFileSync(
        controllerKubeconfig,
        plane.kubeConfigForToken(token, "webhooks-controller").exportConfig(),
      );
      const image = generatedImage(scaffold);
      // The Dockerfile's bundle step, as `docker build` runs it after `npm ci`.
      await inScaffold("npx", image.bundle, { timeout: 180_000 });
      // The pod's environment: the Deployment's variables, with the in-cluster ServiceAccount as a
      // kubeconfig and probes and metrics on free loopback ports (main.ts reads both addresses).
      const controllerEnv = {
        ...image.env,
        KUBECONFIG: controllerKubeconfig,
        PROBES_ADDRESS: "127.0.0.1:0",
        METRICS_ADDRESS: "127.0.0.1:0",
      };
      expect(image.env.NODE_OPTIONS).toBeDefined();
      const server = createServer((request, response) =>
        response.writeHead(request.method === "POST" ? 202 : 405).end(),
      );
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
      const operator = spawn(process.execPath, image.args, {
        cwd: scaffold,
        env: controllerEnv,
        stdio: ["ignore", "pipe", "pipe"],
      });
      let output = "";
      operator.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
      operator.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
      const exited = new Promise<number | null>((done) => operator.once("exit", (code) => done(code)));
      try {
        const manifest = (name: string, config: object) =>
          JSON.stringify({
            apiVersion: "ops.example.com/v1alpha1",
            kind: "Webhook",
            metadata: { name },
            spec: { config },
          });
        writeFileSync(
          join(scaffold, "tasks.json"),
          [
            manifest("call", { http: { url, expectedStatus: 202 } }),
            manifest("shout", { shout: { text: "hi" } }),
            manifest("count", { count: { label: "two" } }),
          ].join("\n"),
        );
        await kubectl("create", "-f", "tasks.json");
        const waited = await kubectl(
          "wait",
          "--for=condition=Succeeded",
          "webhook/call",
          "webhook/shout",
          "webhook/count",
          "--timeout=60s",
        ).catch((error: unknown) =>
          Promise.reject(new Error(`${String(error)}\noperator output:\n${output}`)),
        );
        expect(waited).toMatch(/webhook\.ops\.example\.com\/call condition met/);
        expect(waited).toMatch(/webhook\.ops\.example\.com\/shout condition met/);
        expect(await kubectl("get", "webhook/call", "-o", "jsonpath={.status.result.httpStatus}")).toBe(
          "202",
        );
        expect(
          await kubectl("get", "webhook/shout", "-o", "jsonpath={.status.lastOperation.description}"),
        ).toBe("HI");
        // The steps task: its progress in the controller's record (the generated task-records Role).
        expect(await kubectl("get", "webhook/count", "-o", "jsonpath={.status.result.counted}")).toBe("2");
        // It led: the Lease in its namespace names it.
        expect(
          await inScaffold(
            "kubectl",
            [
              "-n",
              "webhooks-system",
              "get",
              "lease/webhooks-controller",
              "-o",
              "jsonpath={.spec.holderIdentity}",
            ],
            { timeout: 30_000, env },
          ),
        ).not.toBe("");
      } finally {
        operator.kill("SIGTERM");
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
      expect(await exited).toBe(0);
    }, 180_000);
  });
});
