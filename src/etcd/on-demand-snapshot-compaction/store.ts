/**
 * The backup store as the compaction Job sees it: which provider etcd-backup-restore is told to use,
 * and the flags, environment, volumes and mounts that reach the store. This follows etcd-druid's own
 * compaction Job (its `getCompactionJobArgs`, volumes and provider environment), so the Job reads the
 * store exactly as the etcd's backup-restore sidecar writes it.
 *
 * - Cloud providers: the store secret (`spec.backup.store.secretRef`), when there is one, is mounted
 *   read-only and the provider's `*_APPLICATION_CREDENTIALS` variable points at it. Without a secret
 *   nothing is mounted and backup-restore falls back to the pod's cloud identity (the Etcd CRD's
 *   documented behaviour).
 * - ECS reads its credentials from the secret's keys as environment variables.
 * - Local: etcd-backup-restore keeps a Local store at `$HOME/<container>/<prefix>` (container default
 *   `default.bkp`). A hostPath volume (the secret's `hostPath` key, default
 *   `/etc/gardener/local-backupbuckets`, plus the container) is mounted at `/home/nonroot/<container>`,
 *   and `HOME` is set to `/home/nonroot` so that this holds whichever user the image runs as.
 */
import type { V1EnvVar, V1Volume, V1VolumeMount } from "@kubernetes/client-node";
import * as Effect from "effect/Effect";
import type { Etcd, StoreSpec } from "../api/etcd.ts";
import { ObjectReader, type ReadError } from "../services.ts";
import { ErrorCodes, failed, retry, type StepFailure } from "./step-failure.ts";

/** etcd-backup-restore's `--storage-provider` values. */
export type StorageProvider = "S3" | "ABS" | "GCS" | "OSS" | "Swift" | "ECS" | "OCS" | "Local";

/**
 * druid's infrastructure → storage provider mapping (`StorageProviderFromInfraProvider`). An absent
 * provider is Local, as in etcd-backup-restore (an empty `--storage-provider` selects the local store).
 */
const providers: Readonly<Record<string, StorageProvider>> = {
  aws: "S3",
  S3: "S3",
  stackit: "S3",
  azure: "ABS",
  ABS: "ABS",
  gcp: "GCS",
  GCS: "GCS",
  alicloud: "OSS",
  OSS: "OSS",
  openstack: "Swift",
  Swift: "Swift",
  dell: "ECS",
  ECS: "ECS",
  openshift: "OCS",
  OCS: "OCS",
  Local: "Local",
  local: "Local",
};

/** The provider for `store`, or undefined when etcd-backup-restore knows no such provider. */
export const storageProvider = (store: StoreSpec): StorageProvider | undefined =>
  store.provider === undefined || store.provider === ""
    ? "Local"
    : Object.hasOwn(providers, store.provider)
      ? providers[store.provider]
      : undefined;

/** Where the Job keeps its scratch data (an emptyDir): the temporary etcd and downloaded snapshots. */
export const WorkspaceVolume = "etcd-workspace-dir";
export const WorkspaceDir = "/var/etcd/data";
export const BackupSecretVolume = "etcd-backup-secret";
export const GcsSecretDir = "/var/.gcp/";
export const ProviderSecretDir = "/var/etcd-backup";
export const LocalStoreVolume = "host-storage";
export const LocalProviderDefaultHostPath = "/etc/gardener/local-backupbuckets";
/** The home of the distroless `nonroot` user the etcdbrctl image runs as; `$HOME` of the Job's container. */
export const LocalStoreHome = "/home/nonroot";
/** The key of the Local store's secret that names the host directory of the buckets. */
export const LocalHostPathKey = "hostPath";

/** The environment variable telling each provider where its mounted credentials are. */
const credentialsVariable: Partial<Record<StorageProvider, string>> = {
  S3: "AWS_APPLICATION_CREDENTIALS",
  ABS: "AZURE_APPLICATION_CREDENTIALS",
  GCS: "GOOGLE_APPLICATION_CREDENTIALS",
  Swift: "OPENSTACK_APPLICATION_CREDENTIALS",
  OSS: "ALICLOUD_APPLICATION_CREDENTIALS",
  OCS: "OPENSHIFT_APPLICATION_CREDENTIALS",
};

/** The parts of the Job's pod that depend on the store. */
export interface StorePodParts {
  /** The store flags of `etcdbrctl compact`. */
  readonly args: ReadonlyArray<string>;
  readonly env: ReadonlyArray<V1EnvVar>;
  readonly volumes: ReadonlyArray<V1Volume>;
  readonly volumeMounts: ReadonlyArray<V1VolumeMount>;
}

/** `--storage-provider`, `--store-prefix`, `--store-container`, `--store-endpoint-override`. */
export const storeArgs = (store: StoreSpec, provider: StorageProvider): ReadonlyArray<string> => [
  `--storage-provider=${provider}`,
  ...(store.prefix === "" ? [] : [`--store-prefix=${store.prefix}`]),
  ...(store.container === undefined || store.container === ""
    ? []
    : [`--store-container=${store.container}`]),
  ...(store.endpointOverride === undefined || store.endpointOverride === ""
    ? []
    : [`--store-endpoint-override=${store.endpointOverride}`]),
];

const secretKeyEnv = (name: string, secretName: string, key: string): V1EnvVar => ({
  name,
  valueFrom: { secretKeyRef: { name: secretName, key, optional: false } },
});

/** Credentials for a cloud provider: the mounted secret, or nothing (the pod's cloud identity). */
const cloudParts = (store: StoreSpec, provider: Exclude<StorageProvider, "Local">): StorePodParts => {
  const args = storeArgs(store, provider);
  const secretName = store.secretRef?.name;
  if (secretName === undefined || secretName === "") return { args, env: [], volumes: [], volumeMounts: [] };
  if (provider === "ECS") {
    return {
      args,
      env: [
        secretKeyEnv("ECS_ENDPOINT", secretName, "endpoint"),
        secretKeyEnv("ECS_ACCESS_KEY_ID", secretName, "accessKeyID"),
        secretKeyEnv("ECS_SECRET_ACCESS_KEY", secretName, "secretAccessKey"),
      ],
      volumes: [],
      volumeMounts: [],
    };
  }
  const mountPath = provider === "GCS" ? GcsSecretDir : ProviderSecretDir;
  const credentials = provider === "GCS" ? `${GcsSecretDir}serviceaccount.json` : ProviderSecretDir;
  const variable = credentialsVariable[provider];
  return {
    args,
    env: variable === undefined ? [] : [{ name: variable, value: credentials }],
    volumes: [{ name: BackupSecretVolume, secret: { secretName } }],
    volumeMounts: [{ name: BackupSecretVolume, mountPath, readOnly: true }],
  };
};

const backupSecretFailure = (etcd: Etcd, secretName: string) => (error: ReadError) =>
  (error.reason === "NotFound" ? failed : retry)(
    "Failed to get backup store secret",
    ErrorCodes.getBackupSecret,
    `failed to get backup store secret ${etcd.metadata.namespace}/${secretName}`,
    error.message,
  );

/** The host directory of the Local store's buckets: the secret's `hostPath`, else druid's default. */
const localHostPath = (etcd: Etcd, store: StoreSpec): Effect.Effect<string, StepFailure, ObjectReader> => {
  const secretName = store.secretRef?.name;
  if (secretName === undefined || secretName === "") return Effect.succeed(LocalProviderDefaultHostPath);
  return ObjectReader.use((reader) => reader.getSecret(etcd.metadata.namespace, secretName)).pipe(
    Effect.mapError(backupSecretFailure(etcd, secretName)),
    Effect.map((secret) => {
      const data =
        secret.data !== undefined && Object.hasOwn(secret.data, LocalHostPathKey)
          ? secret.data[LocalHostPathKey]
          : undefined;
      return data === undefined ? LocalProviderDefaultHostPath : Buffer.from(data).toString("utf8");
    }),
  );
};

const localParts = (etcd: Etcd, store: StoreSpec): Effect.Effect<StorePodParts, StepFailure, ObjectReader> =>
  localHostPath(etcd, store).pipe(
    Effect.map((hostPath) => {
      const container = store.container ?? "";
      const suffix = container === "" ? "" : `/${container}`;
      return {
        args: storeArgs(store, "Local"),
        env: [{ name: "HOME", value: LocalStoreHome }],
        volumes: [
          {
            name: LocalStoreVolume,
            hostPath: { path: `${hostPath.replace(/\/+$/, "")}${suffix}`, type: "DirectoryOrCreate" },
          },
        ],
        volumeMounts: [{ name: LocalStoreVolume, mountPath: `${LocalStoreHome}${suffix}` }],
      };
    }),
  );

/** Everything the Job's pod needs to reach the store. */
export const storePodParts = (
  etcd: Etcd,
  store: StoreSpec,
  provider: StorageProvider,
): Effect.Effect<StorePodParts, StepFailure, ObjectReader> =>
  provider === "Local" ? localParts(etcd, store) : Effect.succeed(cloudParts(store, provider));
