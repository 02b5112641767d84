/**
 * Where the controller finds its cluster, as kubectl and client-go do: an explicit kubeconfig path, else
 * in-cluster (the pod's service account), else `$KUBECONFIG`, else `~/.kube/config`. Read without
 * client-node for what a controller meets in practice (service account, bearer tokens, client
 * certificates, CA data or files, insecure-skip-tls-verify, tls-server-name, basic auth, impersonation);
 * a kubeconfig that needs more (exec or auth-provider credentials, several files in `$KUBECONFIG`) goes to
 * client-node's `KubeConfig`, loaded only then (docs/design-notes.md §15). A `proxy-url` is refused by
 * name: neither client proxies, and ignoring it would send credentials on a path not meant. Errors name
 * the file, field or line and column, never the content (it holds keys and tokens). The YAML parser
 * loads only for a YAML file (src/yaml-text.ts).
 */
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join } from "node:path";
import { importOptional } from "../optional-package.ts";
import { parseYamlText } from "../yaml-text.ts";
import { type Credentials, type KubeClient, type KubeClientSource, makeKubeClient } from "./kube-client.ts";
import { kubeClientOf } from "./kube-client-node.ts";

/** A kubeconfig that cannot be used; `message` names the file, the field and what to do. */
export class KubeconfigError extends Error {
  override readonly name = "KubeconfigError";
}

const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";
/** client-go re-reads a token file at most once a minute: bound service-account tokens rotate. */
const tokenFileTtlMs = 60_000;

type Fields = Readonly<Record<string, unknown>>;

const asFields = (value: unknown): Fields | undefined =>
  typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Fields) : undefined;

const text = (fields: Fields | undefined, name: string): string | undefined => {
  const value = fields?.[name];
  return typeof value === "string" && value !== "" ? value : undefined;
};

/** A token read from a file, re-read when older than a minute. */
const tokenFile = (path: string): (() => string) => {
  let token = "";
  let readAt = Number.NEGATIVE_INFINITY;
  return () => {
    if (Date.now() - readAt >= tokenFileTtlMs) {
      token = readFileSync(path, "utf8").trim();
      readAt = Date.now();
    }
    return token;
  };
};

/** Which context of a kubeconfig to use (`--context`; default its current-context) and who writes. */
export interface KubeconfigSelection {
  readonly context?: string | undefined;
  /** `fieldManager` of the client's writes (default `opstask`, see `KubeClientSource`). */
  readonly fieldManager?: string | undefined;
}

/** A client and the namespace its context names (the default namespace of kubectl-like commands). */
export interface KubeTarget {
  readonly client: KubeClient;
  /** The context's `namespace` (in a pod: the pod's own); undefined when it names none. */
  readonly namespace: string | undefined;
}

/** In-cluster: the API server's service address and the pod's service-account token and CA. */
export const inClusterSource = (dir = serviceAccountDir): KubeClientSource => {
  const host = process.env.KUBERNETES_SERVICE_HOST;
  const port = process.env.KUBERNETES_SERVICE_PORT ?? "443";
  if (host === undefined || host === "")
    throw new KubeconfigError("in-cluster: KUBERNETES_SERVICE_HOST is not set (not running in a pod?)");
  const ca = readFileSync(join(dir, "ca.crt"));
  const token = tokenFile(join(dir, "token"));
  token();
  const server = `https://${host.includes(":") ? `[${host}]` : host}:${port}`;
  return { server, credentials: async () => ({ ca, headers: { Authorization: `Bearer ${token()}` } }) };
};

/** The named entry of a kubeconfig list (`clusters`, `users`, `contexts`). */
const entry = (config: Fields, list: string, name: string | undefined, inner: string): Fields | undefined => {
  const items = config[list];
  if (!Array.isArray(items)) return undefined;
  for (const item of items) {
    const fields = asFields(item);
    if (fields !== undefined && fields.name === name) return asFields(fields[inner]);
  }
  return undefined;
};

/** Needs client-node: credential plugins, auth providers. */
const needsClientNode = (user: Fields | undefined): string | undefined => {
  if (user?.exec !== undefined) return "users[].user.exec";
  if (user?.["auth-provider"] !== undefined) return "users[].user.auth-provider";
  return undefined;
};

const proxyRefused = (where: string, clusterName: string | undefined): KubeconfigError =>
  new KubeconfigError(
    `${where}: clusters[${clusterName ?? ""}].cluster.proxy-url is set, but opstask connects to the API server ` +
      "directly and does not use proxies; remove proxy-url and make the API server reachable directly",
  );

/** The yaml package's parse error (js-yaml's, client-node's parser, is a `YAMLException`). */
const isYamlParseError = (error: unknown): boolean =>
  error instanceof Error && error.name === "YAMLParseError";

/** A YAML error without the parser's excerpt of the offending line (it may be key material). */
const yamlProblem = (where: string, error: unknown): KubeconfigError => {
  const fromYaml = isYamlParseError(error);
  const position: unknown = fromYaml
    ? Reflect.get(Object(Reflect.get(Object(error), "linePos")), 0)
    : Reflect.get(Object(error), "mark");
  const line = Number(Reflect.get(Object(position), "line"));
  const column = Number(Reflect.get(Object(position), "col") ?? Reflect.get(Object(position), "column"));
  // js-yaml counts lines from 0, the yaml package from 1.
  const at = Number.isFinite(line)
    ? ` at line ${fromYaml ? line : line + 1}${Number.isFinite(column) ? `, column ${fromYaml ? column : column + 1}` : ""}`
    : "";
  return new KubeconfigError(
    `${where}: not valid YAML${at} (the line is not shown: a kubeconfig holds keys); check it with \`kubectl config view\``,
  );
};

const isYamlError = (error: unknown): boolean =>
  isYamlParseError(error) || (error instanceof Error && error.name === "YAMLException");

/**
 * Server and credentials of a kubeconfig's current context (or of `contextName`), and the context's
 * namespace; undefined when client-node must read it.
 */
export const kubeconfigSource = async (
  source: string,
  path: string,
  selected?: string,
): Promise<(KubeClientSource & { readonly namespace?: string | undefined }) | undefined> => {
  let document: unknown;
  try {
    document = await parseYamlText(source);
  } catch (error) {
    throw yamlProblem(path, error);
  }
  const config = asFields(document);
  if (config === undefined) throw new KubeconfigError(`${path}: not a kubeconfig (expected a YAML mapping)`);
  const contextName = selected ?? text(config, "current-context");
  if (contextName === undefined)
    throw new KubeconfigError(
      `${path}: current-context is not set; set it with \`kubectl config use-context NAME\` or pass --context NAME`,
    );
  const context = entry(config, "contexts", contextName, "context");
  if (context === undefined)
    throw new KubeconfigError(
      `${path}: ${selected === undefined ? "current-context" : "--context"} "${contextName}" is not in contexts[]`,
    );
  const clusterName = text(context, "cluster");
  const cluster = entry(config, "clusters", clusterName, "cluster");
  if (cluster === undefined)
    throw new KubeconfigError(
      `${path}: contexts[${contextName}].cluster "${clusterName ?? ""}" is not in clusters[]`,
    );
  const userName = text(context, "user");
  const user = userName === undefined ? undefined : entry(config, "users", userName, "user");
  if (userName !== undefined && user === undefined)
    throw new KubeconfigError(`${path}: contexts[${contextName}].user "${userName}" is not in users[]`);
  if (cluster["proxy-url"] !== undefined) throw proxyRefused(path, clusterName);
  if (needsClientNode(user) !== undefined) return undefined;

  const server = text(cluster, "server");
  if (server === undefined)
    throw new KubeconfigError(`${path}: clusters[${clusterName}].cluster.server is empty`);
  const dir = dirname(path);
  const file = (name: string) => (isAbsolute(name) ? name : join(dir, name));
  /** `<field>-data` (base64) or `<field>` (a file, relative to the kubeconfig). */
  const bytes = (fields: Fields | undefined, field: string): Buffer | undefined => {
    const data = text(fields, `${field}-data`);
    if (data !== undefined) return Buffer.from(data, "base64");
    const name = text(fields, field);
    return name === undefined ? undefined : readFileSync(file(name));
  };
  const ca = bytes(cluster, "certificate-authority");
  const cert = bytes(user, "client-certificate");
  const key = bytes(user, "client-key");
  const insecure = cluster["insecure-skip-tls-verify"] === true;
  const servername = text(cluster, "tls-server-name");
  const staticToken = text(user, "token");
  const tokenPath = text(user, "tokenFile");
  const token =
    staticToken !== undefined
      ? () => staticToken
      : tokenPath === undefined
        ? undefined
        : tokenFile(file(tokenPath));
  const username = text(user, "username");
  const basic =
    username === undefined
      ? undefined
      : `Basic ${Buffer.from(`${username}:${text(user, "password") ?? ""}`).toString("base64")}`;
  const impersonate = text(user, "as");
  token?.();

  return {
    server,
    namespace: text(context, "namespace"),
    credentials: async (): Promise<Credentials> => {
      const bearer = token?.();
      const authorization = bearer !== undefined && bearer !== "" ? `Bearer ${bearer}` : basic;
      return {
        ca,
        cert,
        key,
        ...(insecure ? { rejectUnauthorized: false } : {}),
        servername,
        headers: {
          ...(authorization === undefined ? {} : { Authorization: authorization }),
          ...(impersonate === undefined ? {} : { "Impersonate-User": impersonate }),
        },
      };
    },
  };
};

/** client-node reads what opstask does not (see the file comment); loaded only for such a kubeconfig. */
const viaClientNode = async (
  where: string,
  load: (kubeConfig: import("@kubernetes/client-node").KubeConfig) => void,
  selection: KubeconfigSelection,
): Promise<KubeTarget> => {
  // An optional peer dependency: most controllers never need it (see the file comment).
  const { KubeConfig } = await importOptional(
    "@kubernetes/client-node",
    "This kubeconfig (exec or auth-provider credentials)",
    () => import("@kubernetes/client-node"),
  ).catch((error: unknown) => {
    throw new KubeconfigError(`${where}: ${error instanceof Error ? error.message : String(error)}`);
  });
  const kubeConfig = new KubeConfig();
  try {
    load(kubeConfig);
    if (selection.context !== undefined) {
      if (kubeConfig.getContextObject(selection.context) === null)
        throw new Error(`--context "${selection.context}" is not in contexts[]`);
      kubeConfig.setCurrentContext(selection.context);
    }
  } catch (error) {
    if (isYamlError(error)) throw yamlProblem(where, error);
    throw new KubeconfigError(`${where}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const cluster = kubeConfig.getCurrentCluster();
  if (cluster?.proxyUrl !== undefined && cluster.proxyUrl !== "") throw proxyRefused(where, cluster.name);
  try {
    const namespace = kubeConfig.getContextObject(kubeConfig.getCurrentContext())?.namespace;
    return {
      client: kubeClientOf(kubeConfig, selection.fieldManager),
      namespace: namespace === "" ? undefined : namespace,
    };
  } catch (error) {
    throw new KubeconfigError(`${where}: ${error instanceof Error ? error.message : String(error)}`);
  }
};

const readKubeconfig = async (path: string, selection: KubeconfigSelection): Promise<KubeTarget> => {
  let source: string;
  try {
    source = readFileSync(path, "utf8");
  } catch (error) {
    throw new KubeconfigError(
      `kubeconfig ${path} cannot be read: ${error instanceof Error ? error.message : String(error)}; pass --kubeconfig PATH or set KUBECONFIG`,
    );
  }
  const parsed = await kubeconfigSource(source, path, selection.context);
  if (parsed === undefined) return viaClientNode(path, (kc) => kc.loadFromFile(path), selection);
  const { namespace, ...client } = parsed;
  return {
    client: makeKubeClient({
      ...client,
      ...(selection.fieldManager === undefined ? {} : { fieldManager: selection.fieldManager }),
    }),
    namespace,
  };
};

const readNamespaceFile = (dir: string): string | undefined => {
  try {
    const namespace = readFileSync(join(dir, "namespace"), "utf8").trim();
    return namespace === "" ? undefined : namespace;
  } catch {
    return undefined;
  }
};

/**
 * As `loadKubeClient`, with the context's namespace, a context other than the current one
 * (`selection.context`; in a pod there is none to choose) and the writes' field manager.
 */
export const loadKubeTarget = async (
  path?: string,
  selection: KubeconfigSelection = {},
): Promise<KubeTarget> => {
  if (path !== undefined && path !== "") return readKubeconfig(path, selection);
  if (process.env.KUBERNETES_SERVICE_HOST !== undefined && selection.context === undefined) {
    const source = inClusterSource();
    return {
      client: makeKubeClient({
        ...source,
        ...(selection.fieldManager === undefined ? {} : { fieldManager: selection.fieldManager }),
      }),
      namespace: readNamespaceFile(serviceAccountDir),
    };
  }
  const fromEnv = (process.env.KUBECONFIG ?? "").split(":").filter((p) => p !== "");
  if (fromEnv.length > 1)
    return viaClientNode(`$KUBECONFIG (${fromEnv.join(":")})`, (kc) => kc.loadFromDefault(), selection);
  return readKubeconfig(fromEnv[0] ?? join(homedir(), ".kube", "config"), selection);
};

/**
 * The client for `path` when given; else in-cluster inside a pod, else `$KUBECONFIG`, else
 * `~/.kube/config`. Rejects with a `KubeconfigError` that says which file and field is wrong.
 */
export const loadKubeClient = async (path?: string, selection?: KubeconfigSelection): Promise<KubeClient> =>
  (await loadKubeTarget(path, selection)).client;
