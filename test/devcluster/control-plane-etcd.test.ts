/**
 * The control plane's etcd (dev, test and lab) on a shared machine: any local user can connect to
 * 127.0.0.1, so etcd must refuse whoever does not present the client certificate it was given, on its
 * client port and on its peer port, while kube-apiserver (which holds it) stores and reads as before.
 */
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { CoreV1Api } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import type { PemPair } from "../../src/devcluster/certificates.ts";
import { createTestNamespace, useControlPlane } from "../support/cluster.ts";

const cluster = useControlPlane();

interface Caller {
  /** Verify the server with this CA; without it, trust any server (an attacker does not care). */
  readonly caPem?: string;
  readonly client?: PemPair;
}

/** POSTs JSON to etcd's gateway at `url` (http or https, as the URL says); resolves status and body. */
const etcdPost = (url: string, body: unknown, caller: Caller = {}) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const target = new URL(url);
    const send = target.protocol === "https:" ? httpsRequest : httpRequest;
    const req = send(
      target,
      {
        method: "POST",
        timeout: 5_000,
        headers: { "content-type": "application/json" },
        ...(target.protocol === "https:"
          ? {
              ...(caller.caPem === undefined ? { rejectUnauthorized: false } : { ca: caller.caPem }),
              ...(caller.client === undefined
                ? {}
                : { cert: caller.client.certPem, key: caller.client.keyPem }),
            }
          : {}),
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`POST ${url}: timed out`)));
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });

const b64 = (text: string) => Buffer.from(text).toString("base64");

/** A range request for everything under the apiserver's Secrets. */
const secretsRange = {
  key: b64("/registry/secrets/"),
  range_end: b64("/registry/secrets0"),
  keys_only: true,
};

describe("the control plane's etcd requires kube-apiserver's client certificate", () => {
  it("refuses a client without it on the client port; the certificate's holder reads", async () => {
    const plane = cluster();
    const kc = plane.makeKubeConfig();
    const namespace = await createTestNamespace(kc, "etcd-auth");
    await kc.makeApiClient(CoreV1Api).createNamespacedSecret({
      namespace,
      body: { metadata: { name: "precious" }, stringData: { password: "hunter2" } },
    });

    expect(plane.etcdUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    // Another local user: any server, no client certificate; and plain HTTP on the same port.
    await expect(etcdPost(`${plane.etcdUrl}/v3/kv/range`, secretsRange)).rejects.toThrow(
      /certificate required/,
    );
    await expect(
      etcdPost(`${plane.etcdUrl.replace("https:", "http:")}/v3/kv/range`, secretsRange),
    ).rejects.toThrow();

    // What kube-apiserver presents: the Secret is there, so the refusal above is the certificate's.
    const holder = { caPem: plane.etcdTls.caPem, client: plane.etcdTls.client };
    const read = await etcdPost(`${plane.etcdUrl}/v3/kv/range`, secretsRange, holder);
    expect(read.status).toBe(200);
    const keys = (JSON.parse(read.body) as { kvs?: { key: string }[] }).kvs ?? [];
    expect(keys.map((kv) => Buffer.from(kv.key, "base64").toString())).toContain(
      `/registry/secrets/${namespace}/precious`,
    );
  });

  it("refuses a peer without it on the peer port", async () => {
    const plane = cluster();
    const holder = { caPem: plane.etcdTls.caPem, client: plane.etcdTls.client };
    const list = await etcdPost(`${plane.etcdUrl}/v3/cluster/member/list`, {}, holder);
    const peerUrl = (JSON.parse(list.body) as { members?: { peerURLs?: string[] }[] }).members?.[0]
      ?.peerURLs?.[0];
    expect(peerUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    await expect(etcdPost(`${peerUrl}/members`, {})).rejects.toThrow(/certificate required/);
  });
});
