/**
 * `--resolve HOST:PORT:ADDRESS` (src/etcd/resolve-override.ts): the snapshot host became
 * `<etcd>-client.<ns>.svc` with etcd-druid v0.38.1, and a rule written for `<etcd>-client.<ns>` still routes it.
 */
import { Result } from "effect";
import { describe, expect, it } from "vitest";
import { dialLookup, type ResolveOverride } from "../../src/etcd/resolve-override.ts";

/** The address a lookup answers for `host:port`, or "dns" when no rule matches. */
const dialled = (rules: ReadonlyArray<ResolveOverride>, host: string, port = 8080): string => {
  const lookup = dialLookup(rules, host, port);
  if (Result.isFailure(lookup)) return `error: ${lookup.failure}`;
  if (lookup.success === undefined) return "dns";
  let answer = "";
  lookup.success(host, {}, (_error, address) => {
    answer = String(address);
  });
  return answer;
};

const short: ResolveOverride = { host: "etcd-main-client.shoot", port: "*", address: "127.0.0.1" };
const svc: ResolveOverride = { host: "etcd-main-client.shoot.svc", port: 8080, address: "127.0.0.2" };

describe("resolve rules and the .svc host", () => {
  it("a rule for <etcd>-client.<ns> routes <etcd>-client.<ns>.svc (existing setups keep working)", () => {
    expect(dialled([short], "etcd-main-client.shoot.svc")).toBe("127.0.0.1");
    expect(dialled([short], "ETCD-main-client.shoot.SVC")).toBe("127.0.0.1");
  });

  it("a rule for the .svc name itself wins over the one for the short name, whatever their order", () => {
    expect(dialled([short, svc], "etcd-main-client.shoot.svc")).toBe("127.0.0.2");
    expect(dialled([svc, short], "etcd-main-client.shoot.svc")).toBe("127.0.0.2");
  });

  it("the short name's rule applies when the .svc rule is for another port", () => {
    expect(dialled([svc, short], "etcd-main-client.shoot.svc", 9090)).toBe("127.0.0.1");
  });

  it("a .svc rule does not route the short name, and no other suffix is stripped", () => {
    expect(dialled([svc], "etcd-main-client.shoot")).toBe("dns");
    expect(dialled([short], "etcd-main-client.shoot.svc.cluster.local")).toBe("dns");
    expect(dialled([short], "etcd-main-client.shootsvc")).toBe("dns");
  });
});
