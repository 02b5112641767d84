// The objects of a multi-member etcd cluster laid out as etcd-druid lays one out for an Etcd
// (druid's internal/component: statefulset, clientservice, peerservice, configmap), so that the
// EtcdOpsTask handlers meet what they meet under druid:
//
//   Etcd <etcd>                 druid.gardener.cloud/v1alpha1, client and backup TLS, an S3 store
//   StatefulSet <etcd>          controlled by the Etcd; per pod `etcd` + `backup-restore` containers,
//                               volumes named as druid names them (`backup-restore-ca` is the one the
//                               snapshot handler reads its CA from), Parallel pod management
//   Service <etcd>-client       ClusterIP: client 2379, server 2380, backuprestore 8080
//   Service <etcd>-peer         headless, publishNotReadyAddresses: the members' DNS names
//   ConfigMap <etcd>-config     etcd.conf.yaml in druid's format (the sidecar reads it)
//   Secrets                     <etcd>-ca (bundle.crt), <etcd>-server-tls, <etcd>-client-tls,
//                               <etcd>-backup-restore-server-tls, <etcd>-backup (the S3 credentials)
//
// Where this differs from druid, and why:
// - etcd runs directly from its own image with flags, not under etcd-wrapper (which fetches its
//   configuration from the sidecar); the sidecar runs with --use-etcd-wrapper=false. The flags are
//   the ones druid's etcd.conf.yaml holds for the member. With `etcdWrapperImage` the member starts
//   under the lab's stand-in for etcd-wrapper instead (testbin/etcd-wrapper-lab: the sidecar
//   initializes the data directory, then serves the member's configuration), as druid starts it;
//   the sidecar still runs with --use-etcd-wrapper=false (the stand-in serves no /stop to restart).
// - The readiness probe asks etcd's plain metrics listener (:2381 /health): with client-cert-auth the
//   kubelet cannot probe the client port, and there is no wrapper port.
// - The members' PVCs (volumeClaimTemplates named as druid names them, `<etcd>-<etcd>-<n>`) come
//   from the lab's local-volume provisioner (src/devcluster/lab/local-volumes.ts): a hostPath
//   directory per claim, owned by the non-root user, deleted with its claim.
// - Snapshot and member lease renewal are off (they need the sidecar to reach the kube-apiserver).
// - The sidecar checks its member's leadership every 2s instead of druid's default 5s: the check
//   starts the backup leader's snapshotter and promotes a learner, so the tests wait less for both.
// - Peers talk plain HTTP (druid's `peerUrlTls` is optional); client and backup-restore traffic is TLS.
// - The gRPC gateway is on (`spec.etcd.enableGRPCGateway: true`): the maintenance handler uses it.
// - The store is the lab's S3-compatible object store (src/devcluster/lab/object-store.ts),
//   path-style over plain HTTP: its endpoint and `s3ForcePathStyle` are in the store secret, which
//   etcd-backup-restore v0.43 still reads (it logs that `--store-endpoint-override` is the new way).
// - Every pod passes the restricted Pod Security level: non-root, RuntimeDefault seccomp, all
//   capabilities dropped, no privilege escalation, no hostPath and no root init container.
import type {
  V1ConfigMap,
  V1Container,
  V1OwnerReference,
  V1Secret,
  V1Service,
  V1StatefulSet,
  V1Volume,
} from "@kubernetes/client-node";
import { stringify } from "yaml";
import type { EtcdClusterPki } from "./pki.ts";

export const ClientPort = 2379;
export const PeerPort = 2380;
export const BackupRestorePort = 8080;
/** etcd's plain listener for /health and /metrics, probed by the kubelet. */
export const MetricsPort = 2381;
export const CADataKey = "bundle.crt";
export const NonRootUser = 65532;

export interface EtcdClusterImages {
  readonly etcd: string;
  readonly etcdbrctl: string;
}

/** An S3 store as etcd-backup-restore's credential files name it (the store secret's keys). */
export interface S3Store {
  /** `http://…` or `https://…`: the scheme says whether TLS is used. */
  readonly endpoint: string;
  readonly accessKeyID: string;
  readonly secretAccessKey: string;
  readonly region: string;
}

export interface EtcdClusterSpec {
  readonly name: string;
  readonly namespace: string;
  readonly replicas: number;
  readonly images: EtcdClusterImages;
  /** The S3 store the sidecars and the compaction Job write to and read from. */
  readonly store: S3Store;
  /** `spec.backup.store.container`: the bucket. */
  readonly storeContainer: string;
  readonly storePrefix: string;
  /** `spec.storageClass` of the Etcd: the members' PVCs are claimed from it. */
  readonly storageClass: string;
  /** `spec.storageCapacity` of the Etcd: each member's PVC request. */
  readonly storageCapacity: string;
  /** `--delta-snapshot-period` of the sidecars (a Go duration; a long one keeps events for an on-demand delta). */
  readonly deltaSnapshotPeriod: string;
  /**
   * `spec.backup.fullSnapshotSchedule` (cron): etcdbrctl's default is hourly, which would drop a full
   * snapshot into the store in the middle of a test now and then.
   */
  readonly fullSnapshotSchedule: string;
  readonly pki: EtcdClusterPki;
  /**
   * The lab's etcd-wrapper image (etcd-wrapper-image.ts). Given, each member's etcd starts as under
   * druid: the backup-restore sidecar initializes the data directory (restoring a lost one from the
   * store, adding a scale-up member as a learner) and serves the member's configuration from
   * etcd.conf.yaml; the sidecar reads its StatefulSet and Lease with the member ServiceAccount
   * (member-rbac.ts). Not given, etcd starts from its flags below and a lost data directory stays lost.
   */
  readonly etcdWrapperImage?: string;
}

export const secretNames = (name: string) => ({
  ca: `${name}-ca`,
  etcdServer: `${name}-server-tls`,
  etcdClient: `${name}-client-tls`,
  backupRestoreServer: `${name}-backup-restore-server-tls`,
  store: `${name}-backup`,
});

/** druid's default labels of everything it makes for an Etcd. */
export const defaultLabels = (name: string): Record<string, string> => ({
  "app.kubernetes.io/managed-by": "etcd-druid",
  "app.kubernetes.io/part-of": name,
});

const podLabels = (name: string): Record<string, string> => ({
  ...defaultLabels(name),
  "app.kubernetes.io/component": "etcd-statefulset",
  "app.kubernetes.io/name": name,
});

const peerHost = (spec: EtcdClusterSpec, pod: string) => `${pod}.${spec.name}-peer.${spec.namespace}.svc`;
const podNames = (spec: EtcdClusterSpec) =>
  Array.from({ length: spec.replicas }, (_, i) => `${spec.name}-${i}`);

/** The Etcd object (without status), as a user or Gardener writes it for druid. */
export const etcdObject = (spec: EtcdClusterSpec) => {
  const secrets = secretNames(spec.name);
  const tls = (server: string) => ({
    tlsCASecretRef: { name: secrets.ca, dataKey: CADataKey },
    serverTLSSecretRef: { name: server },
    clientTLSSecretRef: { name: secrets.etcdClient },
  });
  return {
    apiVersion: "druid.gardener.cloud/v1alpha1",
    kind: "Etcd",
    metadata: { name: spec.name, namespace: spec.namespace, labels: { app: spec.name } },
    spec: {
      replicas: spec.replicas,
      labels: { app: spec.name },
      storageClass: spec.storageClass,
      storageCapacity: spec.storageCapacity,
      etcd: {
        image: spec.images.etcd,
        clientPort: ClientPort,
        serverPort: PeerPort,
        enableGRPCGateway: true,
        clientUrlTls: tls(secrets.etcdServer),
      },
      backup: {
        image: spec.images.etcdbrctl,
        port: BackupRestorePort,
        store: {
          provider: "S3",
          container: spec.storeContainer,
          prefix: spec.storePrefix,
          secretRef: { name: secrets.store },
        },
        tls: tls(secrets.backupRestoreServer),
        deltaSnapshotPeriod: spec.deltaSnapshotPeriod,
        fullSnapshotSchedule: spec.fullSnapshotSchedule,
      },
    },
  };
};

const tlsSecret = (
  spec: EtcdClusterSpec,
  name: string,
  pair: { certPem: string; keyPem: string },
): V1Secret => ({
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name, namespace: spec.namespace, labels: defaultLabels(spec.name) },
  type: "kubernetes.io/tls",
  stringData: { "tls.crt": pair.certPem, "tls.key": pair.keyPem },
});

export const secrets = (spec: EtcdClusterSpec): V1Secret[] => {
  const names = secretNames(spec.name);
  return [
    {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: names.ca, namespace: spec.namespace, labels: defaultLabels(spec.name) },
      type: "Opaque",
      stringData: { [CADataKey]: spec.pki.ca.certPem },
    },
    tlsSecret(spec, names.etcdServer, spec.pki.etcdServer),
    tlsSecret(spec, names.etcdClient, spec.pki.etcdClient),
    tlsSecret(spec, names.backupRestoreServer, spec.pki.backupRestoreServer),
    {
      apiVersion: "v1",
      kind: "Secret",
      metadata: { name: names.store, namespace: spec.namespace, labels: defaultLabels(spec.name) },
      type: "Opaque",
      // etcd-backup-restore's S3 credential files (AWS_APPLICATION_CREDENTIALS names the directory).
      stringData: {
        accessKeyID: spec.store.accessKeyID,
        secretAccessKey: spec.store.secretAccessKey,
        region: spec.store.region,
        endpoint: spec.store.endpoint,
        s3ForcePathStyle: "true",
      },
    },
  ];
};

const owner = (spec: EtcdClusterSpec, uid: string): V1OwnerReference => ({
  apiVersion: "druid.gardener.cloud/v1alpha1",
  kind: "Etcd",
  name: spec.name,
  uid,
  controller: true,
  blockOwnerDeletion: true,
});

export const services = (spec: EtcdClusterSpec, etcdUid: string): V1Service[] => {
  const selector = { ...defaultLabels(spec.name), "app.kubernetes.io/component": "etcd-statefulset" };
  const port = (name: string, number: number) => ({
    name,
    protocol: "TCP",
    port: number,
    targetPort: number,
  });
  return [
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: {
        name: `${spec.name}-client`,
        namespace: spec.namespace,
        labels: {
          ...defaultLabels(spec.name),
          "app.kubernetes.io/name": `${spec.name}-client`,
          "app.kubernetes.io/component": "etcd-client-service",
        },
        ownerReferences: [owner(spec, etcdUid)],
      },
      spec: {
        type: "ClusterIP",
        sessionAffinity: "None",
        selector,
        ports: [
          port("client", ClientPort),
          port("server", PeerPort),
          port("backuprestore", BackupRestorePort),
        ],
      },
    },
    {
      apiVersion: "v1",
      kind: "Service",
      metadata: {
        name: `${spec.name}-peer`,
        namespace: spec.namespace,
        labels: {
          ...defaultLabels(spec.name),
          "app.kubernetes.io/name": `${spec.name}-peer`,
          "app.kubernetes.io/component": "etcd-peer-service",
        },
        ownerReferences: [owner(spec, etcdUid)],
      },
      spec: {
        type: "ClusterIP",
        clusterIP: "None",
        sessionAffinity: "None",
        publishNotReadyAddresses: true,
        selector,
        ports: [port("peer", PeerPort)],
      },
    },
  ];
};

const Paths = {
  data: "/var/etcd/data",
  config: "/var/etcd/config",
  ca: "/var/etcd/ssl/ca",
  server: "/var/etcd/ssl/server",
  client: "/var/etcd/ssl/client",
  backupRestoreCA: "/var/etcdbr/ssl/ca",
  backupRestoreServer: "/var/etcdbr/ssl/server",
  backupRestoreClient: "/var/etcdbr/ssl/client",
  providerBackupSecret: "/var/etcd-backup",
} as const;

/** What the restricted Pod Security level asks of every container. */
const restrictedContainer = {
  allowPrivilegeEscalation: false,
  capabilities: { drop: ["ALL"] },
};

/** etcd.conf.yaml as druid's configmap component writes it (the sidecar reads the member's URLs from it). */
export const etcdConfigYaml = (spec: EtcdClusterSpec): string => {
  const pods = podNames(spec);
  const urls = (scheme: string, port: number) =>
    Object.fromEntries(pods.map((pod) => [pod, [`${scheme}://${peerHost(spec, pod)}:${port}`]]));
  return stringify({
    name: "etcd-config",
    "data-dir": `${Paths.data}/new.etcd`,
    metrics: "basic",
    "snapshot-count": 10000,
    "enable-grpc-gateway": true,
    "quota-backend-bytes": 8 * 1024 * 1024 * 1024,
    "initial-cluster-token": "etcd-cluster",
    "initial-cluster-state": "new",
    "initial-cluster": pods.map((pod) => `${pod}=http://${peerHost(spec, pod)}:${PeerPort}`).join(","),
    "auto-compaction-mode": "periodic",
    "auto-compaction-retention": "30m",
    "listen-peer-urls": `http://0.0.0.0:${PeerPort}`,
    "listen-client-urls": `https://0.0.0.0:${ClientPort}`,
    // The lab's readiness probe (druid probes etcd-wrapper's /readyz instead).
    "listen-metrics-urls": `http://0.0.0.0:${MetricsPort}`,
    "initial-advertise-peer-urls": urls("http", PeerPort),
    "advertise-client-urls": urls("https", ClientPort),
    "client-transport-security": {
      "cert-file": `${Paths.server}/tls.crt`,
      "key-file": `${Paths.server}/tls.key`,
      "client-cert-auth": true,
      "trusted-ca-file": `${Paths.ca}/${CADataKey}`,
      "auto-tls": false,
    },
  });
};

export const configMap = (spec: EtcdClusterSpec, etcdUid: string): V1ConfigMap => ({
  apiVersion: "v1",
  kind: "ConfigMap",
  metadata: {
    name: `${spec.name}-config`,
    namespace: spec.namespace,
    labels: {
      ...defaultLabels(spec.name),
      "app.kubernetes.io/name": `${spec.name}-config`,
      "app.kubernetes.io/component": "etcd-configmap",
    },
    ownerReferences: [owner(spec, etcdUid)],
  },
  data: { "etcd.conf.yaml": etcdConfigYaml(spec) },
});

const podNameEnv = { name: "POD_NAME", valueFrom: { fieldRef: { fieldPath: "metadata.name" } } };
const podNamespaceEnv = {
  name: "POD_NAMESPACE",
  valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } },
};

const etcdContainer = (spec: EtcdClusterSpec): V1Container => {
  const pods = podNames(spec);
  const self = `$(POD_NAME).${spec.name}-peer.${spec.namespace}.svc`;
  return {
    name: "etcd",
    image: spec.images.etcd,
    imagePullPolicy: "Never",
    // The member's lines of etcd.conf.yaml as flags; $(POD_NAME) is expanded by the kubelet.
    args: [
      "--name=$(POD_NAME)",
      `--data-dir=${Paths.data}/new.etcd`,
      `--listen-client-urls=https://0.0.0.0:${ClientPort}`,
      `--advertise-client-urls=https://${self}:${ClientPort}`,
      `--listen-peer-urls=http://0.0.0.0:${PeerPort}`,
      `--initial-advertise-peer-urls=http://${self}:${PeerPort}`,
      `--initial-cluster=${pods.map((pod) => `${pod}=http://${peerHost(spec, pod)}:${PeerPort}`).join(",")}`,
      "--initial-cluster-state=new",
      "--initial-cluster-token=etcd-cluster",
      `--listen-metrics-urls=http://0.0.0.0:${MetricsPort}`,
      "--client-cert-auth=true",
      `--trusted-ca-file=${Paths.ca}/${CADataKey}`,
      `--cert-file=${Paths.server}/tls.crt`,
      `--key-file=${Paths.server}/tls.key`,
      "--enable-grpc-gateway=true",
      "--snapshot-count=10000",
      "--auto-compaction-mode=periodic",
      "--auto-compaction-retention=30m",
      "--quota-backend-bytes=8589934592",
    ],
    env: [podNameEnv],
    ports: [
      { name: "server", containerPort: PeerPort, protocol: "TCP" },
      { name: "client", containerPort: ClientPort, protocol: "TCP" },
    ],
    readinessProbe: {
      httpGet: { path: "/health", port: MetricsPort, scheme: "HTTP" },
      periodSeconds: 2,
      failureThreshold: 5,
    },
    resources: { requests: { cpu: "50m", memory: "128Mi" } },
    securityContext: restrictedContainer,
    volumeMounts: [
      { name: spec.name, mountPath: Paths.data },
      { name: "etcd-ca", mountPath: Paths.ca },
      { name: "etcd-server-tls", mountPath: Paths.server },
      { name: "etcd-client-tls", mountPath: Paths.client },
      { name: "backup-restore-ca", mountPath: Paths.backupRestoreCA },
    ],
  };
};

const backupRestoreContainer = (spec: EtcdClusterSpec): V1Container => ({
  name: "backup-restore",
  image: spec.images.etcdbrctl,
  imagePullPolicy: "Never",
  // druid's flags (statefulset builder), with the differences named at the top of this file.
  args: [
    "server",
    `--server-port=${BackupRestorePort}`,
    "--enable-snapshot-lease-renewal=false",
    "--storage-provider=S3",
    `--store-prefix=${spec.storePrefix}`,
    `--schedule=${spec.fullSnapshotSchedule}`,
    `--delta-snapshot-period=${spec.deltaSnapshotPeriod}`,
    "--delta-snapshot-memory-limit=104857600",
    "--garbage-collection-policy=LimitBased",
    "--max-backups=7",
    "--compress-snapshots=false",
    "--compression-policy=gzip",
    "--etcd-snapshot-timeout=15m",
    "--etcd-defrag-timeout=15m",
    "--auto-compaction-mode=periodic",
    "--auto-compaction-retention=30m",
    `--cacert=${Paths.ca}/${CADataKey}`,
    `--cert=${Paths.client}/tls.crt`,
    `--key=${Paths.client}/tls.key`,
    "--insecure-transport=false",
    "--insecure-skip-tls-verify=false",
    `--endpoints=https://${spec.name}-local:${ClientPort}`,
    `--service-endpoints=https://${spec.name}-client:${ClientPort}`,
    `--server-cert=${Paths.backupRestoreServer}/tls.crt`,
    `--server-key=${Paths.backupRestoreServer}/tls.key`,
    `--data-dir=${Paths.data}/new.etcd`,
    `--restoration-temp-snapshots-dir=${Paths.data}/restoration.temp`,
    `--snapstore-temp-directory=${Paths.data}/temp`,
    "--etcd-connection-timeout=5m",
    "--use-etcd-wrapper=false",
    "--enable-member-lease-renewal=false",
    "--reelection-period=2s",
  ],
  env: [
    podNameEnv,
    podNamespaceEnv,
    { name: "STORAGE_CONTAINER", value: spec.storeContainer },
    { name: "AWS_APPLICATION_CREDENTIALS", value: Paths.providerBackupSecret },
  ],
  ports: [{ name: "server", containerPort: BackupRestorePort, protocol: "TCP" }],
  resources: { requests: { cpu: "50m", memory: "128Mi" } },
  securityContext: restrictedContainer,
  volumeMounts: [
    { name: spec.name, mountPath: Paths.data },
    { name: "etcd-config-file", mountPath: Paths.config },
    { name: "backup-restore-server-tls", mountPath: Paths.backupRestoreServer },
    { name: "etcd-ca", mountPath: Paths.ca },
    { name: "etcd-client-tls", mountPath: Paths.client },
    { name: "etcd-backup-secret", mountPath: Paths.providerBackupSecret },
  ],
});

/** druid's etcd container under etcd-wrapper: the configuration comes from the sidecar, not flags. */
const withEtcdWrapper = (spec: EtcdClusterSpec, container: V1Container): V1Container =>
  spec.etcdWrapperImage === undefined
    ? container
    : {
        ...container,
        image: spec.etcdWrapperImage,
        args: [
          `--backup-restore-host-port=${spec.name}-local:${BackupRestorePort}`,
          `--backup-restore-ca-cert-bundle-path=${Paths.backupRestoreCA}/${CADataKey}`,
        ],
        env: [],
      };

/** druid's member ServiceAccount (named like the Etcd, member-rbac.ts) where the sidecar needs the apiserver. */
const memberServiceAccount = (spec: EtcdClusterSpec) =>
  spec.etcdWrapperImage === undefined
    ? { automountServiceAccountToken: false }
    : { serviceAccountName: spec.name, automountServiceAccountToken: true };

const secretVolume = (name: string, secretName: string): V1Volume => ({
  name,
  secret: { secretName, defaultMode: 0o640 },
});

export const statefulSet = (spec: EtcdClusterSpec, etcdUid: string): V1StatefulSet => {
  const names = secretNames(spec.name);
  return {
    apiVersion: "apps/v1",
    kind: "StatefulSet",
    metadata: {
      name: spec.name,
      namespace: spec.namespace,
      labels: { ...podLabels(spec.name) },
      ownerReferences: [owner(spec, etcdUid)],
    },
    spec: {
      replicas: spec.replicas,
      selector: { matchLabels: defaultLabels(spec.name) },
      serviceName: `${spec.name}-peer`,
      podManagementPolicy: "Parallel",
      updateStrategy: { type: "RollingUpdate" },
      template: {
        metadata: { labels: { app: spec.name, ...podLabels(spec.name) } },
        spec: {
          hostAliases: [{ ip: "127.0.0.1", hostnames: [`${spec.name}-local`] }],
          shareProcessNamespace: true,
          enableServiceLinks: false,
          ...memberServiceAccount(spec),
          containers: [withEtcdWrapper(spec, etcdContainer(spec)), backupRestoreContainer(spec)],
          securityContext: {
            runAsUser: NonRootUser,
            runAsGroup: NonRootUser,
            runAsNonRoot: true,
            fsGroup: NonRootUser,
            fsGroupChangePolicy: "OnRootMismatch",
            seccompProfile: { type: "RuntimeDefault" },
          },
          volumes: [
            {
              name: "etcd-config-file",
              configMap: {
                name: `${spec.name}-config`,
                items: [{ key: "etcd.conf.yaml", path: "etcd.conf.yaml" }],
                defaultMode: 0o640,
              },
            },
            secretVolume("etcd-ca", names.ca),
            secretVolume("etcd-server-tls", names.etcdServer),
            secretVolume("etcd-client-tls", names.etcdClient),
            secretVolume("backup-restore-ca", names.ca),
            secretVolume("backup-restore-server-tls", names.backupRestoreServer),
            secretVolume("backup-restore-client-tls", names.etcdClient),
            secretVolume("etcd-backup-secret", names.store),
          ],
        },
      },
      // druid's: one claim per member, named after the Etcd (spec.volumeClaimTemplate's default); the
      // StatefulSet controller labels the claims with the selector's labels, which is how the
      // recovery finds them.
      volumeClaimTemplates: [
        {
          metadata: { name: spec.name },
          spec: {
            accessModes: ["ReadWriteOnce"],
            storageClassName: spec.storageClass,
            resources: { requests: { storage: spec.storageCapacity } },
          },
        },
      ],
    },
  };
};
