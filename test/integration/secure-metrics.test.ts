/**
 * Secure metrics on a real kube-apiserver: the controller command, started with deploy/'s Deployment
 * arguments and authenticated as deploy/'s ServiceAccount (so deploy/'s RBAC is what lets it ask), serves
 * /metrics over HTTPS to a ServiceAccount bound to opstask-metrics-reader, answers 401 without a valid
 * token and 403 to a valid token without that binding, and serves its probes as plain HTTP without
 * authentication (only /healthz and /readyz). Given certificate files, it serves them, and a rotated
 * pair without a restart.
 */
import type { X509Certificate } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { request as httpsRequest, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CoreV1Api,
  type KubeConfig,
  RbacAuthorizationV1Api,
  type V1Deployment,
} from "@kubernetes/client-node";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { serveController } from "../../src/cli/controller-command.ts";
import { readControllerOptions } from "../../src/cli/options.ts";
import { freePorts } from "../../src/devcluster/ports.ts";
import { kubeClientOf } from "../../src/kube/kube-client-node.ts";
import { startMetricsServer } from "../../src/runtime/metrics-server.ts";
import { selfSignedCertificate } from "../../src/runtime/self-signed-certificate.ts";
import { useControlPlane } from "../support/cluster.ts";
import { applyManifests, deployCrdFiles, deployObjects, theOne } from "../support/deploy-manifests.ts";

const objects = deployObjects();
const cluster = useControlPlane({ crds: deployCrdFiles });

interface Answer {
  readonly status: number;
  readonly body: string;
  readonly certificate?: X509Certificate;
}

/** GET over HTTPS; `ca` given: the server's certificate must verify for `localhost`, else any is taken. */
const getHttps = (port: number, path: string, token?: string, ca?: string) =>
  new Promise<Answer>((resolve, reject) => {
    const req = httpsRequest(
      {
        host: "127.0.0.1",
        port,
        path,
        timeout: 10_000,
        agent: false, // a new connection (and handshake) per request: no kept-alive socket, no TLS session
        headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
        ...(ca === undefined ? { rejectUnauthorized: false } : { ca, servername: "localhost" }),
      },
      (res) => {
        const raw = (res.socket as import("node:tls").TLSSocket).getPeerX509Certificate?.();
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          body += chunk;
        });
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, body, ...(raw === undefined ? {} : { certificate: raw }) }),
        );
      },
    );
    req.on("timeout", () => req.destroy(new Error("timed out")));
    req.on("error", reject);
    req.end();
  });

const getHttp = (port: number, path: string) =>
  new Promise<Answer>((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, path, timeout: 10_000, agent: false }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        body += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("timeout", () => req.destroy(new Error("timed out")));
    req.on("error", reject);
    req.end();
  });

describe("secure metrics, as deployed", () => {
  let admin: KubeConfig;
  let asController: KubeConfig;
  let readerToken: string;
  let strangerToken: string;
  let metricsPort: number;
  let probePort: number;
  const stop = new AbortController();
  let served: Promise<"stopped" | "lost" | "failed"> | undefined;

  beforeAll(async () => {
    const plane = cluster();
    admin = plane.makeKubeConfig();
    await applyManifests(admin, objects);
    asController = plane.kubeConfigForToken(
      await plane.serviceAccountToken("opstask-system", "opstask", {
        create: false,
        expirationSeconds: 3600,
      }),
      "system:serviceaccount:opstask-system:opstask",
    );
    await admin.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: "monitoring" } } });
    readerToken = await plane.serviceAccountToken("monitoring", "prometheus");
    strangerToken = await plane.serviceAccountToken("monitoring", "stranger");
    await admin.makeApiClient(RbacAuthorizationV1Api).createClusterRoleBinding({
      body: {
        metadata: { name: "prometheus-reads-opstask-metrics" },
        roleRef: {
          apiGroup: "rbac.authorization.k8s.io",
          kind: "ClusterRole",
          name: "opstask-metrics-reader",
        },
        subjects: [{ kind: "ServiceAccount", name: "prometheus", namespace: "monitoring" }],
      },
    });
    [metricsPort = 0, probePort = 0] = await freePorts(2);
    const deployment = theOne<V1Deployment>(objects, "Deployment");
    const args = [
      ...(deployment.spec?.template.spec?.containers[0]?.args ?? []).slice(1),
      // The test's own: listeners on loopback ports of this machine, quiet logs.
      `--metrics-address=127.0.0.1:${metricsPort}`,
      `--probe-address=127.0.0.1:${probePort}`,
      "--log-level=error",
    ];
    const options = readControllerOptions(args, {});
    expect(options.metricsSecure).toBe(true);
    served = serveController(asController, options, stop.signal);
    await vi.waitFor(async () => expect((await getHttp(probePort, "/healthz")).status).toBe(200), {
      timeout: 30_000,
      interval: 100,
    });
  }, 120_000);

  afterAll(async () => {
    stop.abort();
    await served;
  }, 60_000);

  it("serves /metrics over HTTPS to a ServiceAccount allowed get /metrics", async () => {
    const answer = await getHttps(metricsPort, "/metrics", readerToken);
    expect(answer.status).toBe(200);
    expect(answer.body).toContain("opstask_reconcile_total");
    // The self-signed certificate made at start, for this host's names.
    expect(answer.certificate?.subjectAltName).toContain("DNS:localhost");
    expect(answer.certificate?.verify(answer.certificate.publicKey)).toBe(true);
    // The decisions are counted (this scrape's own is counted before the text is rendered).
    expect(answer.body).toMatch(/opstask_metrics_requests_total\{result="Allowed"\} [1-9]/);
  });

  it("answers 401 without a token or with one the apiserver does not accept", async () => {
    expect((await getHttps(metricsPort, "/metrics")).status).toBe(401);
    expect((await getHttps(metricsPort, "/metrics", "not-a-token")).status).toBe(401);
    const revokedLooking = `${readerToken.slice(0, -4)}AAAA`;
    expect((await getHttps(metricsPort, "/metrics", revokedLooking)).status).toBe(401);
  });

  it("answers 403 to a valid token whose ServiceAccount may not get /metrics", async () => {
    const answer = await getHttps(metricsPort, "/metrics", strangerToken);
    expect(answer.status).toBe(403);
    expect(answer.body).not.toContain("opstask_");
  });

  it("serves nothing but /metrics there, and no plain HTTP", async () => {
    expect((await getHttps(metricsPort, "/healthz", readerToken)).status).toBe(404);
    await expect(getHttp(metricsPort, "/metrics")).rejects.toThrow();
  });

  it("serves the probes as plain HTTP without authentication, and only the probes", async () => {
    expect((await getHttp(probePort, "/healthz")).status).toBe(200);
    expect([200, 503]).toContain((await getHttp(probePort, "/readyz")).status);
    expect((await getHttp(probePort, "/metrics")).status).toBe(404);
  });
});

describe("secure metrics with certificate files", () => {
  it("serves the given certificate, and a rotated pair without a restart", async () => {
    const plane = cluster();
    const dir = mkdtempSync(join(tmpdir(), "opstask-metrics-tls-"));
    const certFile = join(dir, "tls.crt");
    const keyFile = join(dir, "tls.key");
    const write = () => {
      const pair = selfSignedCertificate(["localhost"]);
      writeFileSync(keyFile, pair.keyPem);
      writeFileSync(certFile, pair.certPem);
      return pair.certPem;
    };
    const first = write();
    const registry = new Registry();
    const server = (await startMetricsServer({
      address: "127.0.0.1:0",
      secure: true,
      certFile,
      keyFile,
      registry,
      client: kubeClientOf(plane.makeKubeConfig()),
      reloadIntervalMs: 100,
    })) as Server;
    try {
      const port = (server.address() as AddressInfo).port;
      // Verified against the file's certificate; admin (system:masters) may get /metrics.
      const answer = await getHttps(port, "/metrics", plane.token, first);
      expect(answer.status).toBe(200);
      const second = write();
      await vi.waitFor(
        async () => expect((await getHttps(port, "/metrics", plane.token, second)).status).toBe(200),
        { timeout: 10_000, interval: 200 },
      );
      await expect(getHttps(port, "/metrics", plane.token, first)).rejects.toThrow();
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
