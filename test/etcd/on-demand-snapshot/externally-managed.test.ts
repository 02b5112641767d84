/**
 * An Etcd with `spec.externallyManagedMemberAddresses` (etcd-druid v0.38.1) has no pods and no client
 * Service: the snapshot goes to one of the member addresses, as druid's `GetClientHostname` picks it
 * (docs/contract.md §9), and with TLS the CA comes from `tlsCASecretRef.name` (there is no StatefulSet,
 * §13 D8). The stand-ins listen on 127.0.0.1, which is also a member address here.
 */
import { Effect, Random, Result } from "effect";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { OnDemandSnapshotConfig } from "../../../src/etcd/api/config/on-demand-snapshot.ts";
import { decodeEtcd, type Etcd } from "../../../src/etcd/api/etcd.ts";
import { snapshotHost, snapshotRequest } from "../../../src/etcd/on-demand-snapshot/request.ts";
import { Resources } from "../../../src/etcd/services.ts";
import { type EtcdOptions, etcdObject, run, secretObject, taskOf, world } from "../support/fixtures.ts";
import { makeCA, makeServerCertificate } from "../support/pki.ts";
import { type StandIn, startStandIn } from "../support/stand-in.ts";

const etcd = (options: EtcdOptions): Etcd => {
  const result = decodeEtcd(etcdObject(options));
  if (Result.isFailure(result)) throw new Error(result.failure.message);
  return result.success;
};
const full: OnDemandSnapshotConfig = {
  kind: "onDemandSnapshot",
  type: "full",
  timeoutSecondsDelta: 60,
  timeoutSecondsFull: 900,
};
const hostOf = (target: Etcd, seed: number) =>
  Effect.runSync(Effect.result(snapshotHost(target)).pipe(Random.withSeed(seed)));

describe("the snapshot host of an Etcd with externally managed members (docs/contract.md §9)", () => {
  it("decodes spec.externallyManagedMemberAddresses", () => {
    expect(etcd({ members: ["10.0.0.1"] }).spec.externallyManagedMemberAddresses).toEqual(["10.0.0.1"]);
  });

  it("is one of the member addresses, picked at random as druid does (every member is picked)", () => {
    const members = ["198.18.0.1", "198.18.0.2", "member-2.example.test"];
    const picked = new Set<string>();
    for (let seed = 0; seed < 64; seed += 1) {
      const host = hostOf(etcd({ members }), seed);
      if (Result.isFailure(host)) throw new Error(host.failure.message);
      picked.add(host.success);
    }
    expect([...picked].sort()).toEqual([...members].sort());
  });

  it("an empty list means druid manages the pods: the client Service <etcd>-client.<ns>.svc", () => {
    expect(hostOf(etcd({ members: [] }), 1)).toEqual(Result.succeed("test-etcd-client.ns.svc"));
  });

  it("an IPv6 member address is written in brackets in the URL", () => {
    expect(snapshotRequest(etcd({ members: ["fd00::1"] }), full, 1, undefined, "fd00::1")).toEqual({
      url: "http://[fd00::1]:8080/snapshot/full",
      timeoutMs: 1,
      servername: "fd00::1",
    });
  });

  it.each([
    ["a path", "evil.example/x?"],
    ["userinfo", "user@198.18.0.1"],
    ["a port", "198.18.0.1:8080"],
    ["a scheme", "https://198.18.0.1"],
    ["empty", ""],
  ])("an address with %s is refused before any request, naming the field and entry", async (_, bad) => {
    const outcome = await run(
      "admit",
      taskOf(),
      world([["etcd", etcdObject({ members: ["198.18.0.1", bad] })]]),
    );
    expect(outcome).toEqual({
      kind: "failed",
      description: "Etcd has an invalid externally managed member address",
      error: {
        code: "ERR_INVALID_MEMBER_ADDRESS",
        message: "invalid externally managed member address",
        cause: `spec.externallyManagedMemberAddresses[1]: ${JSON.stringify(bad)} is neither an IP address nor a host name; write the member's address without scheme or port`,
      },
    });
  });
});

describe("the snapshot of an Etcd with externally managed members reaches a member", () => {
  let plain: StandIn;
  let secure: StandIn;
  const ca = makeCA();
  const member = "member-0.example.test";

  beforeAll(async () => {
    plain = await startStandIn();
    secure = await startStandIn({ tls: makeServerCertificate(ca, [member]) });
  });
  afterAll(async () => {
    await plain.close();
    await secure.close();
  });

  it("http: POST to the member address (no client Service exists)", async () => {
    const objects = world([["etcd", etcdObject({ port: plain.port, members: ["127.0.0.1"] })]]);
    expect(await run("execute", taskOf(), objects, { resolve: [] })).toEqual({
      kind: "completed",
      description: "Snapshot created successfully",
    });
    expect(plain.requests).toEqual([
      expect.objectContaining({ method: "POST", path: "/snapshot/full", host: `127.0.0.1:${plain.port}` }),
    ]);
  });

  it("https: verified against the member's name with the CA of tlsCASecretRef.name (no StatefulSet)", async () => {
    const objects = world([
      [
        "etcd",
        etcdObject({ port: secure.port, members: [member], tls: { name: "member-ca", dataKey: "ca.crt" } }),
      ],
    ]);
    objects.put(Resources.secret, secretObject("member-ca", { "ca.crt": ca.certPem }));
    const resolve = [{ host: member, port: "*", address: "127.0.0.1" }] as const;
    expect(await run("execute", taskOf(), objects, { resolve })).toEqual({
      kind: "completed",
      description: "Snapshot created successfully",
    });
    expect(secure.requests).toEqual([
      expect.objectContaining({ host: `${member}:${secure.port}`, sni: member }),
    ]);
  });
});
