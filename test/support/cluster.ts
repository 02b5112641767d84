// Shared integration-test support: one real local control plane per test file.
//
//   const cluster = useControlPlane({ crds: druidCrds });
//   it("...", async () => { const kc = cluster().makeKubeConfig(); ... });
import { randomBytes } from "node:crypto";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { afterAll, beforeAll } from "vitest";
import {
  type ControlPlane,
  type ControlPlaneOptions,
  startControlPlane,
} from "../../src/devcluster/control-plane.ts";

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * etcd-druid's EtcdOpsTask and Etcd CRDs: what opstask must run against unchanged. By default the
 * copies the repository keeps (vendor/etcd-druid/README.md), which test/api/crd.test.ts compares with
 * etcd-druid's own files when it has them; `OPSTASK_DRUID_CRDS` names a directory of etcd-druid's
 * files to run against instead (another etcd-druid version, say).
 */
export const druidCrds: readonly string[] =
  process.env.OPSTASK_DRUID_CRDS !== undefined && process.env.OPSTASK_DRUID_CRDS !== ""
    ? [
        join(process.env.OPSTASK_DRUID_CRDS, "druid.gardener.cloud_etcdopstasks.yaml"),
        join(process.env.OPSTASK_DRUID_CRDS, "druid.gardener.cloud_etcds.yaml"),
      ]
    : [
        join(repoRoot, "vendor", "etcd-druid", "crds", "druid.gardener.cloud_etcdopstasks.yaml"),
        join(repoRoot, "deploy", "crds", "druid.gardener.cloud_etcds.yaml"),
      ];

const BUILD_TIMEOUT_MS = 45 * 60_000;
const START_TIMEOUT_MS = 90_000;

/**
 * Starts a control plane in `beforeAll` and stops it in `afterAll` of the calling test file; returns an
 * accessor for use inside tests. The hook timeout covers a first-time build of the binaries.
 */
export function useControlPlane(options: ControlPlaneOptions = {}): () => ControlPlane {
  let plane: ControlPlane | undefined;
  const buildTimeoutMs = options.buildTimeoutMs ?? BUILD_TIMEOUT_MS;
  const startTimeoutMs = options.startTimeoutMs ?? START_TIMEOUT_MS;
  beforeAll(
    async () => {
      plane = await startControlPlane({ ...options, buildTimeoutMs, startTimeoutMs });
    },
    buildTimeoutMs + startTimeoutMs + 30_000,
  );
  afterAll(async () => {
    await plane?.stop();
  }, 60_000);
  return () => {
    if (plane === undefined)
      throw new Error("control plane not started: call the accessor inside tests/hooks");
    return plane;
  };
}

/** Creates a namespace with a random suffix (namespaces are never finalized: no controller-manager). */
export async function createTestNamespace(kc: KubeConfig, prefix = "test"): Promise<string> {
  const name = `${prefix}-${randomBytes(4).toString("hex")}`;
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
  return name;
}
