/**
 * A real kube-apiserver and etcd for an operator's tests, as controller-runtime's envtest gives Go
 * operators: start it in `beforeAll`, install the kind's CRD, run `runTaskController` against its
 * kubeconfig (or a ServiceAccount's, to check RBAC), stop it in `afterAll`.
 *
 * The binaries: `KUBEBUILDER_ASSETS` when it names a directory holding `kube-apiserver` and `etcd`
 * (setup-envtest's), else the build cache (`~/.cache/opstask/testbin`, shared by every project), else
 * they are built there once by the package's `scripts/testbin` from the Go module proxy (Go ≥ 1.25;
 * it takes minutes). With `build: false`, or without Go, the start fails with what to do.
 * The control plane code uses `@kubernetes/client-node` (an optional peer dependency: install it as a
 * dev dependency); nothing of it is loaded until `startControlPlane` is called.
 */
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type {
  ControlPlane as RunningPlane,
  ServiceAccountTokenOptions,
} from "../../devcluster/control-plane.ts";
import { type KubeClient, makeKubeClient } from "../../kube/kube-client.ts";
import { importOptional } from "../../optional-package.ts";
import { applyManifests } from "./apply-manifests.ts";
import { type CrdSource, crdFileOf } from "./crd-source.ts";

export type { CrdSource } from "./crd-source.ts";

export interface ControlPlaneOptions {
  /** CRDs installed (and served) before `startControlPlane` resolves. */
  readonly crds?: ReadonlyArray<CrdSource>;
  /**
   * Build missing binaries with the package's `scripts/testbin` (default true; needs Go ≥ 1.25 and
   * the Go module proxy, once). With false a missing binary fails the start at once.
   */
  readonly build?: boolean;
  /** Bound of a first build of the binaries (default 45 min); not part of `startTimeoutMs`. */
  readonly buildTimeoutMs?: number;
  /** Bound of starting etcd and kube-apiserver and installing `crds` (default 90 s). */
  readonly startTimeoutMs?: number;
  /** Progress lines (default: none); `OPSTASK_DEVCLUSTER_VERBOSE=1` also streams the servers' output. */
  readonly log?: (line: string) => void;
}

export interface ServiceAccountOptions {
  /** Create the ServiceAccount when missing (default true). */
  readonly create?: boolean;
  readonly expirationSeconds?: number;
}

/** A running control plane: etcd and kube-apiserver on 127.0.0.1, no nodes and no controllers. */
export interface ControlPlane extends AsyncDisposable {
  /** `https://127.0.0.1:<port>`. */
  readonly server: string;
  /** The serving certificate's CA bundle (PEM). */
  readonly caPem: string;
  /** A kubeconfig file for the admin user (system:masters): `KUBECONFIG`, `loadKubeClient(path)`, kubectl. */
  readonly kubeconfigPath: string;
  /** The admin user's bearer token. */
  readonly adminToken: string;
  /** Installs a CRD and resolves once its resource is served. */
  installCrd(crd: CrdSource): Promise<void>;
  /** Server-side applies manifests (a YAML text, or objects): RBAC, namespaces, anything served. */
  apply(manifests: string | ReadonlyArray<object>): Promise<void>;
  /** Creates a namespace named `<prefix>-<random>` and returns its name. Namespaces are never deleted here (no controllers). */
  createNamespace(prefix?: string): Promise<string>;
  /** A TokenRequest token of a ServiceAccount (created when missing): its requests are checked by RBAC. */
  serviceAccountToken(namespace: string, name: string, options?: ServiceAccountOptions): Promise<string>;
  /** Writes a kubeconfig for a bearer token (a ServiceAccount's, say) and returns its path. */
  kubeconfigFor(token: string, userName?: string): string;
  /** opstask's Kubernetes client, as the admin or with `token`. */
  kubeClient(token?: string): KubeClient;
  /** The servers' recent output, for a failing test's message. */
  logs(lines?: number): string;
  /** Stops etcd and kube-apiserver and removes their files, kubeconfigs included. Idempotent. */
  stop(): Promise<void>;
}

const feature = "startControlPlane (opstask/testing)";

const loadDevcluster = () =>
  importOptional("@kubernetes/client-node", feature, async () => ({
    ...(await import("../../devcluster/control-plane.ts")),
    ...(await import("../../devcluster/binaries.ts")),
    ...(await import("../../devcluster/kubeconfig.ts")),
  }));

const missingBinaries = (cause: unknown, script: string): Error =>
  new Error(
    `${feature}: no kube-apiserver and etcd binaries. Set KUBEBUILDER_ASSETS to a directory holding both ` +
      `(e.g. setup-envtest's), or build them once with ${script} (Go >= 1.25 and the Go module proxy; ` +
      `10-20 min on 2 cores, cached in ~/.cache/opstask/testbin); startControlPlane builds them itself ` +
      `unless build is false. ${cause instanceof Error ? cause.message : String(cause)}`,
    { cause },
  );

export const startControlPlane = async (options: ControlPlaneOptions = {}): Promise<ControlPlane> => {
  const devcluster = await loadDevcluster();
  const script = join(devcluster.defaultRepoRoot(), "scripts", "testbin");
  const binaries = await devcluster
    .resolveBinaries({
      build: options.build ?? true,
      ...(options.buildTimeoutMs === undefined ? {} : { buildTimeoutMs: options.buildTimeoutMs }),
      ...(options.log === undefined ? {} : { log: options.log }),
    })
    .catch((cause: unknown) => Promise.reject(missingBinaries(cause, script)));
  const plane: RunningPlane = await devcluster.startControlPlane({
    binaries,
    ...(options.startTimeoutMs === undefined ? {} : { startTimeoutMs: options.startTimeoutMs }),
    ...(options.log === undefined ? {} : { log: options.log }),
  });
  let files = 0;
  const clients: KubeClient[] = [];
  const clientFor = (token: string): KubeClient => {
    const client = makeKubeClient({
      server: plane.server,
      fieldManager: "opstask-testing",
      credentials: async () => ({
        ca: Buffer.from(plane.caPem),
        headers: { Authorization: `Bearer ${token}` },
      }),
    });
    clients.push(client);
    return client;
  };
  const admin = clientFor(plane.token);
  const harness: ControlPlane = {
    server: plane.server,
    caPem: plane.caPem,
    kubeconfigPath: plane.kubeconfigPath,
    adminToken: plane.token,
    installCrd: async (crd) => plane.applyCrds([crdFileOf(crd, plane.dir, files++)]),
    apply: (manifests) => applyManifests(admin, manifests, "opstask-testing"),
    createNamespace: async (prefix = "test") => {
      const name = `${prefix}-${randomBytes(4).toString("hex")}`;
      await admin.request({ method: "POST", path: "/api/v1/namespaces", body: { metadata: { name } } });
      return name;
    },
    serviceAccountToken: (namespace, name, saOptions: ServiceAccountTokenOptions = {}) =>
      plane.serviceAccountToken(namespace, name, saOptions),
    kubeconfigFor: (token, userName = "token-user") => {
      const path = join(plane.dir, `kubeconfig-${files++}`);
      devcluster.writeKubeconfig(path, { server: plane.server, caPem: plane.caPem, token, userName });
      return path;
    },
    kubeClient: (token) => (token === undefined ? admin : clientFor(token)),
    logs: (lines) => plane.logs(lines),
    stop: async () => {
      for (const client of clients) client.close();
      await plane.stop();
    },
    [Symbol.asyncDispose]: () => harness.stop(),
  };
  try {
    for (const crd of options.crds ?? []) await harness.installCrd(crd);
  } catch (error) {
    await harness.stop();
    throw error;
  }
  return harness;
};
