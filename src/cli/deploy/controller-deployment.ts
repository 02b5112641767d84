/**
 * The Deployment of a kind's controller, modelled on the flagship's deploy/deployment.yaml: one
 * replica with leader election (old pod first, so the Lease passes at once), probes on :8081, secure
 * metrics on :8443, a non-root, read-only, capability-free container with a small /tmp, the flagship's
 * requests and limits, and its Node settings (node-settings.ts), followed by the operator's own
 * environment (`env`; one named NODE_OPTIONS or MALLOC_ARENA_MAX replaces the generated one).
 */
import { type ControllerIdentity, labelsOf } from "./controller-rbac.ts";
import { tunedNodeEnv } from "./node-settings.ts";
import type { EnvVar } from "./operator-env.ts";

export const probePort = 8081;
export const metricsPort = 8443;

const probe = (path: string, periodSeconds: number, extra: Record<string, number> = {}) => ({
  httpGet: { path, port: "probes" },
  periodSeconds,
  ...extra,
});

export const controllerDeployment = (
  identity: ControllerIdentity,
  image: string,
  env: ReadonlyArray<EnvVar> = [],
): Record<string, unknown> => {
  const labels = labelsOf(identity.name);
  const given = new Set(env.map((variable) => variable.name));
  const tuned = Object.entries(tunedNodeEnv)
    .filter(([name]) => !given.has(name))
    .map(([name, value]) => ({ name, value }));
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name: identity.name, namespace: identity.namespace, labels },
    spec: {
      replicas: 1,
      revisionHistoryLimit: 5,
      selector: { matchLabels: labels },
      strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 0, maxUnavailable: 1 } },
      template: {
        metadata: { labels },
        spec: {
          serviceAccountName: identity.name,
          automountServiceAccountToken: true,
          enableServiceLinks: false,
          terminationGracePeriodSeconds: 30,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: 65532,
            runAsGroup: 65532,
            seccompProfile: { type: "RuntimeDefault" },
          },
          containers: [
            {
              name: "controller",
              image,
              imagePullPolicy: "IfNotPresent",
              env: [
                ...tuned,
                // What the project's main module passes to runTaskController: leaderElection.name, probes, metrics.
                { name: "LEADER_ELECTION_ID", value: identity.leaseName },
                {
                  name: "POD_NAMESPACE",
                  valueFrom: { fieldRef: { fieldPath: "metadata.namespace" } },
                },
                // runTaskController's `namespace`: where its RoleBindings grant it its rules.
                ...(identity.watchNamespaces === undefined
                  ? []
                  : [{ name: "WATCH_NAMESPACES", value: identity.watchNamespaces.join(",") }]),
                ...env.map(({ name, value }) => ({ name, value })),
              ],
              ports: [
                { name: "metrics", containerPort: metricsPort, protocol: "TCP" },
                { name: "probes", containerPort: probePort, protocol: "TCP" },
              ],
              startupProbe: probe("/healthz", 2, { failureThreshold: 30 }),
              livenessProbe: probe("/healthz", 10, { timeoutSeconds: 2, failureThreshold: 3 }),
              readinessProbe: probe("/readyz", 5, { timeoutSeconds: 2, failureThreshold: 3 }),
              resources: {
                requests: { cpu: "50m", memory: "160Mi" },
                limits: { cpu: "1", memory: "256Mi" },
              },
              securityContext: {
                runAsNonRoot: true,
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                privileged: false,
                capabilities: { drop: ["ALL"] },
                seccompProfile: { type: "RuntimeDefault" },
              },
              volumeMounts: [{ name: "tmp", mountPath: "/tmp" }],
            },
          ],
          volumes: [{ name: "tmp", emptyDir: { sizeLimit: "16Mi" } }],
        },
      },
    },
  };
};
