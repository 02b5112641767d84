/** The snapshot request (docs/contract.md §9): URL, logical host, timeout, CA. */
import { Result } from "effect";
import { describe, expect, it } from "vitest";
import type { OnDemandSnapshotConfig } from "../../../src/etcd/api/config/on-demand-snapshot.ts";
import { decodeEtcd, type Etcd } from "../../../src/etcd/api/etcd.ts";
import { snapshotRequest } from "../../../src/etcd/on-demand-snapshot/request.ts";
import { type EtcdOptions, etcdObject } from "../support/fixtures.ts";

const etcd = (options: EtcdOptions = {}): Etcd => {
  const result = decodeEtcd(etcdObject(options));
  if (Result.isFailure(result)) throw new Error(result.failure.message);
  return result.success;
};
const config = (patch: Partial<OnDemandSnapshotConfig> = {}): OnDemandSnapshotConfig => ({
  kind: "onDemandSnapshot",
  type: "full",
  timeoutSecondsDelta: 60,
  timeoutSecondsFull: 900,
  ...patch,
});

describe("snapshot request (docs/contract.md §9)", () => {
  it("http://<etcd>-client.<ns>:8080/snapshot/full when spec.backup.port is absent", () => {
    expect(snapshotRequest(etcd(), config(), 900_000, undefined)).toEqual({
      url: "http://test-etcd-client.ns.svc:8080/snapshot/full",
      timeoutMs: 900_000,
      servername: "test-etcd-client.ns.svc",
    });
  });

  it("the port is spec.backup.port; ?final=true only when isFinal", () => {
    expect(snapshotRequest(etcd({ port: 9090 }), config({ isFinal: true }), 1, undefined).url).toBe(
      "http://test-etcd-client.ns.svc:9090/snapshot/full?final=true",
    );
    expect(snapshotRequest(etcd({ port: 9090 }), config({ isFinal: false }), 1, undefined).url).toBe(
      "http://test-etcd-client.ns.svc:9090/snapshot/full",
    );
    expect(snapshotRequest(etcd(), config({ type: "delta" }), 1, undefined).url).toBe(
      "http://test-etcd-client.ns.svc:8080/snapshot/delta",
    );
  });

  it("https with the CA when the backup-restore server serves TLS", () => {
    expect(snapshotRequest(etcd(), config(), 1, "PEM")).toEqual({
      url: "https://test-etcd-client.ns.svc:8080/snapshot/full",
      timeoutMs: 1,
      servername: "test-etcd-client.ns.svc",
      ca: "PEM",
    });
  });
});
