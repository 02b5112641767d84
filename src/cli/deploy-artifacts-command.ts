/**
 * `opstask deploy-artifacts --module <file> --export <kind> [-o <dir>]`: writes the deployment of a
 * task kind's controller (RBAC, ServiceAccount, namespace, Deployment, kustomization, Dockerfile) from
 * the kind `defineTaskKind` made, as `opstask crd` prints its CRD.
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import type { PolicyRule } from "../api/policy-rule.ts";
import { isPinnedImage } from "./deploy/controller-dockerfile.ts";
import { rbacRulesWildcard } from "./deploy/controller-rbac.ts";
import { type DeployArtifactsInput, deployArtifacts } from "./deploy/deploy-artifacts.ts";
import { operatorEnv } from "./deploy/operator-env.ts";
import { OptionError } from "./options.ts";
import { parseArgsMessage } from "./parse-args-message.ts";

const usage = `Usage: opstask deploy-artifacts --module <file> [--export <name>] [-o <dir>] [options]

Writes what deploys a task kind's controller: rbac.yaml (exactly the requests the controller makes,
plus the kind's rbacRules), serviceaccount.yaml, namespace.yaml, deployment.yaml (probes, leader
election, read-only root, resources, opstask's tuned Node settings), kustomization.yaml and a
Dockerfile that bundles your main with \`opstask bundle\`.

  --module FILE          the module exporting the kind (defineTaskKind's result)
  --export NAME          the export holding the kind (default kind)
  -o, --output DIR       where to write the files (default deploy)
  --name NAME            ServiceAccount, roles and Deployment (default <plural>-controller)
  --namespace NS         the controller's namespace (default <plural>-system)
  --lease NAME           the leader-election Lease (default: --name)
  --image REF            the controller image (default <name>:latest)
  --main FILE            the program the image runs (default main.ts)
  --metrics-secure BOOL  secure metrics on :8443 and their RBAC (default true)
  --build-base REF       the Dockerfile's build base (default an exact Node release)
  --runtime-base REF     its runtime base (default distroless Node 24; give it by digest to pin it)
  --watch-namespaces NS  watch only these namespaces (comma-separated), granted the rules by a
                         RoleBinding in each instead of a ClusterRoleBinding (default: all)
  --schedules            the controller runs the kind's TaskSchedules (runTaskController's schedules):
                         their RBAC, and taskschedules-crd.yaml, the TaskSchedule CRD
  --env NAME=VALUE       an environment variable of the controller container (repeatable; NODE_OPTIONS
                         or MALLOC_ARENA_MAX replaces the generated one)
  -h, --help             this text
`;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** defineTaskKind's result → what the artefacts need, or why the export is not a kind. */
export const kindOfExport = (
  value: unknown,
  name: string,
): DeployArtifactsInput | { readonly error: string } => {
  const resource = isRecord(value) ? value.resource : undefined;
  if (
    !isRecord(resource) ||
    typeof resource.group !== "string" ||
    typeof resource.version !== "string" ||
    typeof resource.kind !== "string" ||
    typeof resource.plural !== "string"
  )
    return { error: `export ${name} is not a task kind (expected defineTaskKind(...)'s result)` };
  const rules = isRecord(value) ? value.rbacRules : undefined;
  const wildcard = Array.isArray(rules) ? rbacRulesWildcard(rules as ReadonlyArray<PolicyRule>) : undefined;
  if (wildcard !== undefined) return { error: `export ${name}: ${wildcard}` };
  return {
    resource: {
      group: resource.group,
      version: resource.version,
      kind: resource.kind,
      plural: resource.plural,
    },
    ...(Array.isArray(rules) ? { rbacRules: rules as ReadonlyArray<PolicyRule> } : {}),
  };
};

const parse = (argv: ReadonlyArray<string>) => {
  try {
    return parseArgs({
      args: [...argv],
      options: {
        module: { type: "string" },
        export: { type: "string", default: "kind" },
        output: { type: "string", short: "o", default: "deploy" },
        name: { type: "string" },
        namespace: { type: "string" },
        lease: { type: "string" },
        image: { type: "string" },
        main: { type: "string" },
        "metrics-secure": { type: "string", default: "true" },
        "watch-namespaces": { type: "string" },
        "build-base": { type: "string" },
        "runtime-base": { type: "string" },
        env: { type: "string", multiple: true, default: [] },
        schedules: { type: "boolean", default: false },
        help: { type: "boolean", short: "h" },
      },
      strict: true,
    }).values;
  } catch (error) {
    throw new OptionError(`${parseArgsMessage(error)}; see 'opstask deploy-artifacts --help'`);
  }
};

export const deployArtifactsCommand = async (argv: ReadonlyArray<string>): Promise<number> => {
  const values = parse(argv);
  if (values.help === true) {
    process.stdout.write(usage);
    return 0;
  }
  if (values.module === undefined)
    throw new OptionError(
      "--module <file> is required: the module that exports defineTaskKind(...)'s result",
    );
  const secure = values["metrics-secure"];
  if (secure !== "true" && secure !== "false")
    throw new OptionError(`--metrics-secure ${secure}: give true or false`);
  const watchNamespaces = values["watch-namespaces"]?.split(",").map((namespace) => namespace.trim());
  const badNamespace = watchNamespaces?.find(
    (namespace) => !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(namespace),
  );
  if (badNamespace !== undefined)
    throw new OptionError(
      `--watch-namespaces ${JSON.stringify(values["watch-namespaces"])}: ${JSON.stringify(badNamespace)} is not a namespace name; give lower-case DNS labels separated by commas, such as team-a,team-b`,
    );
  for (const flag of ["build-base", "runtime-base"] as const) {
    const reference = values[flag];
    if (reference !== undefined && !isPinnedImage(reference))
      throw new OptionError(
        `--${flag} ${reference}: a tag that can move; give the image by digest (<ref>@sha256:<digest>, from crane digest <ref>) or by an exact version tag (e.g. node:24.21.0-bookworm-slim)`,
      );
  }
  const env = operatorEnv(values.env);
  if ("error" in env) throw new OptionError(env.error);
  let loaded: Record<string, unknown>;
  try {
    loaded = await import(pathToFileURL(resolve(values.module)).href);
  } catch (cause) {
    throw new OptionError(`cannot load --module ${values.module}: ${String(cause)}`);
  }
  if (!(values.export in loaded)) {
    const names = Object.keys(loaded).join(", ") || "none";
    throw new OptionError(
      `--export ${values.export}: ${values.module} has no such export (it has: ${names})`,
    );
  }
  const kind = kindOfExport(loaded[values.export], values.export);
  if ("error" in kind) {
    process.stderr.write(`opstask deploy-artifacts: ${kind.error}\n`);
    return 1;
  }
  const files = deployArtifacts(kind, {
    regenerate: `opstask deploy-artifacts --module ${values.module} --export ${values.export}`,
    secureMetrics: secure === "true",
    env: env.env,
    schedules: values.schedules === true,
    ...(values.name === undefined ? {} : { name: values.name }),
    ...(values.namespace === undefined ? {} : { namespace: values.namespace }),
    ...(values.lease === undefined ? {} : { leaseName: values.lease }),
    ...(values.image === undefined ? {} : { image: values.image }),
    ...(values.main === undefined ? {} : { main: values.main }),
    ...(watchNamespaces === undefined ? {} : { watchNamespaces }),
    bases: {
      ...(values["build-base"] === undefined ? {} : { build: values["build-base"] }),
      ...(values["runtime-base"] === undefined ? {} : { runtime: values["runtime-base"] }),
    },
  });
  await mkdir(values.output, { recursive: true });
  for (const file of files) await writeFile(join(values.output, file.path), file.text);
  process.stdout.write(`${files.map((file) => join(values.output, file.path)).join("\n")}\n`);
  return 0;
};
