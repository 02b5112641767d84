/**
 * The lab's S3-compatible object store: gofakes3 (src/devcluster/images/object-store-image.ts) as a
 * Deployment and a Service `object-store` in the etcd's namespace, its bucket made when it starts.
 * The etcd cluster's backup-restore sidecars, the compaction Job and the tests reach it as a cloud
 * store: path-style, plain HTTP, through the Service, every request signed with the key pair made for
 * this store (the server refuses any other: its Service address is reachable from the host, so by
 * every local user). The pair reaches the server from a Secret, never in its arguments. Its pod
 * passes the `restricted` Pod Security level (non-root, RuntimeDefault seccomp, no capabilities, no
 * privilege escalation, no volume).
 *
 *   const store = await startObjectStore(kubeConfig, { namespace, image });
 *   store.endpoint     // http://object-store.<namespace>.svc:9000, for pods
 *   store.address      // <Service IP>:9000, for the node's network namespace
 *
 * What it holds lives in the server's memory: a restarted pod starts with an empty bucket, and the
 * lab is not kept between runs anyway.
 */
import { randomBytes } from "node:crypto";
import {
  AppsV1Api,
  CoreV1Api,
  type KubeConfig,
  type V1Deployment,
  type V1Secret,
  type V1Service,
} from "@kubernetes/client-node";
import { ObjectStorePort } from "../images/index.ts";

export const ObjectStoreName = "object-store";
/** The Secret holding the server's key pair. */
export const ObjectStoreCredentialsName = "object-store-credentials";
export const ObjectStoreBucket = "bucket";

export interface ObjectStoreOptions {
  readonly namespace: string;
  /** The gofakes3 image as loaded into the node. */
  readonly image: string;
  readonly timeoutMs?: number;
}

export interface ObjectStore {
  readonly namespace: string;
  readonly bucket: string;
  /** The S3 endpoint pods use (cluster DNS). */
  readonly endpoint: string;
  /** `<Service IP>:<port>`: the endpoint from the node's network namespace, where no cluster DNS is. */
  readonly address: string;
  /** The only key pair the server accepts (AWS Signature Version 4). */
  readonly accessKeyID: string;
  readonly secretAccessKey: string;
  readonly region: string;
}

export interface ObjectStoreCredentials {
  readonly accessKeyID: string;
  readonly secretAccessKey: string;
}

export const newObjectStoreCredentials = (): ObjectStoreCredentials => ({
  accessKeyID: `lab-${randomBytes(6).toString("hex")}`,
  secretAccessKey: randomBytes(18).toString("base64url"),
});

export const objectStoreCredentialsSecret = (
  namespace: string,
  credentials: ObjectStoreCredentials,
): V1Secret => ({
  apiVersion: "v1",
  kind: "Secret",
  metadata: { name: ObjectStoreCredentialsName, namespace, labels },
  type: "Opaque",
  stringData: { accessKeyID: credentials.accessKeyID, secretAccessKey: credentials.secretAccessKey },
});

const credentialEnv = (name: string, key: string) => ({
  name,
  valueFrom: { secretKeyRef: { name: ObjectStoreCredentialsName, key } },
});

const labels = { "app.kubernetes.io/name": ObjectStoreName, "app.kubernetes.io/part-of": "opstask-lab" };

export const objectStoreDeployment = (options: ObjectStoreOptions): V1Deployment => ({
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: ObjectStoreName, namespace: options.namespace, labels },
  spec: {
    replicas: 1,
    strategy: { type: "Recreate" },
    selector: { matchLabels: labels },
    template: {
      metadata: { labels },
      spec: {
        automountServiceAccountToken: false,
        enableServiceLinks: false,
        securityContext: {
          runAsNonRoot: true,
          runAsUser: 65532,
          runAsGroup: 65532,
          seccompProfile: { type: "RuntimeDefault" },
        },
        containers: [
          {
            name: "gofakes3",
            image: options.image,
            imagePullPolicy: "Never",
            args: [`-listen=:${ObjectStorePort}`, `-bucket=${ObjectStoreBucket}`],
            env: [
              credentialEnv("S3_ACCESS_KEY_ID", "accessKeyID"),
              credentialEnv("S3_SECRET_ACCESS_KEY", "secretAccessKey"),
            ],
            ports: [{ name: "s3", containerPort: ObjectStorePort, protocol: "TCP" }],
            // The port accepts once the server serves (an unsigned GET would be refused).
            readinessProbe: {
              tcpSocket: { port: ObjectStorePort },
              periodSeconds: 1,
              failureThreshold: 3,
            },
            resources: { requests: { cpu: "10m", memory: "32Mi" } },
            securityContext: {
              allowPrivilegeEscalation: false,
              readOnlyRootFilesystem: true,
              capabilities: { drop: ["ALL"] },
            },
          },
        ],
      },
    },
  },
});

export const objectStoreService = (namespace: string): V1Service => ({
  apiVersion: "v1",
  kind: "Service",
  metadata: { name: ObjectStoreName, namespace, labels },
  spec: {
    type: "ClusterIP",
    selector: labels,
    ports: [{ name: "s3", protocol: "TCP", port: ObjectStorePort, targetPort: ObjectStorePort }],
  },
});

/** Creates the Deployment and the Service; resolves once the server answers its probe. */
export const startObjectStore = async (
  kubeConfig: KubeConfig,
  options: ObjectStoreOptions,
): Promise<ObjectStore> => {
  const { namespace } = options;
  const apps = kubeConfig.makeApiClient(AppsV1Api);
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const credentials = newObjectStoreCredentials();
  await core.createNamespacedSecret({
    namespace,
    body: objectStoreCredentialsSecret(namespace, credentials),
  });
  const service = await core.createNamespacedService({ namespace, body: objectStoreService(namespace) });
  await apps.createNamespacedDeployment({ namespace, body: objectStoreDeployment(options) });
  const timeoutMs = options.timeoutMs ?? 120_000;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const deployment = await apps.readNamespacedDeployment({ namespace, name: ObjectStoreName });
    if ((deployment.status?.readyReplicas ?? 0) >= 1) break;
    if (Date.now() > deadline) {
      const pods = await core.listNamespacedPod({
        namespace,
        labelSelector: `app.kubernetes.io/name=${ObjectStoreName}`,
      });
      const states = pods.items.map((pod) =>
        JSON.stringify({
          name: pod.metadata?.name,
          phase: pod.status?.phase,
          containers: pod.status?.containerStatuses,
        }),
      );
      throw new Error(
        `object store ${namespace}/${ObjectStoreName} not Ready after ${timeoutMs} ms: ${states.join(" | ") || "no pod (see the ReplicaSet's events)"}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  return {
    namespace,
    bucket: ObjectStoreBucket,
    endpoint: `http://${ObjectStoreName}.${namespace}.svc:${ObjectStorePort}`,
    address: `${service.spec?.clusterIP ?? ""}:${ObjectStorePort}`,
    ...credentials,
    region: "us-east-1",
  };
};
