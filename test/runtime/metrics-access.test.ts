/**
 * The secure-metrics decision without an apiserver: what it asks (TokenReview, then a
 * SubjectAccessReview for the reviewed user), and what it remembers. The real apiserver's answers are
 * exercised in test/integration/secure-metrics.test.ts; here a scripted client counts the requests.
 */
import { X509Certificate } from "node:crypto";
import { describe, expect, it, vi } from "vitest";
import type { ApiRequest, KubeClient } from "../../src/kube/kube-client.ts";
import { ApiCallError } from "../../src/kube/kube-client.ts";
import { bearerToken, makeMetricsAccess } from "../../src/runtime/metrics-access.ts";
import { selfSignedCertificate } from "../../src/runtime/self-signed-certificate.ts";

interface Script {
  readonly users: Record<string, string>;
  readonly readers: ReadonlyArray<string>;
  down?: boolean;
}

const scriptedClient = (script: Script) => {
  const requests: ApiRequest[] = [];
  const client: KubeClient = {
    _tag: "KubeClient",
    server: "https://apiserver.invalid",
    request: async (request) => {
      requests.push(request);
      if (script.down === true) throw new ApiCallError(0, "connect ECONNREFUSED");
      const body = request.body as { spec: Record<string, unknown> };
      if (request.path.endsWith("/tokenreviews")) {
        const user = script.users[String(body.spec.token)];
        return {
          status: 201,
          body: {
            status:
              user === undefined
                ? { authenticated: false }
                : { authenticated: true, user: { username: user, uid: `uid-${user}`, groups: ["g"] } },
          },
        };
      }
      return { status: 201, body: { status: { allowed: script.readers.includes(String(body.spec.user)) } } };
    },
    watch: () => Promise.reject(new Error("no watches here")),
    close: () => {},
  };
  return { client, requests };
};

describe("secure metrics access", () => {
  it("asks a TokenReview, then a SubjectAccessReview of get /metrics for the reviewed user", async () => {
    const { client, requests } = scriptedClient({ users: { t1: "prometheus" }, readers: ["prometheus"] });
    const access = makeMetricsAccess({ client });
    expect(await access.check("Bearer t1")).toEqual({ _tag: "Allowed", user: "prometheus" });
    expect(requests.map((r) => [r.method, r.path])).toEqual([
      ["POST", "/apis/authentication.k8s.io/v1/tokenreviews"],
      ["POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews"],
    ]);
    expect((requests[1]?.body as { spec: unknown } | undefined)?.spec).toEqual({
      user: "prometheus",
      uid: "uid-prometheus",
      groups: ["g"],
      nonResourceAttributes: { path: "/metrics", verb: "get" },
    });
  });

  it("decides 401 without asking when there is no bearer token, 401 and 403 from the reviews", async () => {
    const { client, requests } = scriptedClient({ users: { t2: "stranger" }, readers: [] });
    const access = makeMetricsAccess({ client });
    expect((await access.check(undefined))._tag).toBe("Unauthenticated");
    expect((await access.check("Basic dXNlcjpwYXNz"))._tag).toBe("Unauthenticated");
    expect(requests).toHaveLength(0);
    expect((await access.check("Bearer unknown"))._tag).toBe("Unauthenticated");
    expect(await access.check("Bearer t2")).toEqual({ _tag: "Forbidden", user: "stranger" });
  });

  it("remembers an allowed token 60 s and a refused one 10 s, by hash; a failed review not at all", async () => {
    let now = 0;
    const script: Script = { users: { good: "prometheus", other: "stranger" }, readers: ["prometheus"] };
    const { client, requests } = scriptedClient(script);
    const access = makeMetricsAccess({ client, now: () => now });
    await access.check("Bearer good");
    await access.check("Bearer other");
    expect(requests).toHaveLength(4);
    now = 9_000;
    expect((await access.check("Bearer good"))._tag).toBe("Allowed");
    expect((await access.check("Bearer other"))._tag).toBe("Forbidden");
    expect(requests).toHaveLength(4);
    now = 11_000; // the refusal expired, the grant did not
    await access.check("Bearer other");
    await access.check("Bearer good");
    expect(requests).toHaveLength(6);
    now = 61_000;
    await access.check("Bearer good");
    expect(requests).toHaveLength(8);
    // The apiserver unreachable: 500, asked again on the next scrape.
    script.down = true;
    expect((await access.check("Bearer fresh"))._tag).toBe("Unavailable");
    expect((await access.check("Bearer fresh"))._tag).toBe("Unavailable");
    expect(requests).toHaveLength(10);
  });

  it("keeps at most maxEntries decisions", async () => {
    const users = Object.fromEntries(Array.from({ length: 5 }, (_, n) => [`t${n}`, `u${n}`]));
    const { client, requests } = scriptedClient({ users, readers: [] });
    const access = makeMetricsAccess({ client, maxEntries: 3 });
    for (let n = 0; n < 5; n += 1) await access.check(`Bearer t${n}`);
    const before = requests.length;
    await access.check("Bearer t4"); // kept
    expect(requests.length).toBe(before);
    await access.check("Bearer t0"); // evicted
    expect(requests.length).toBe(before + 2);
  });

  it("answers Busy without asking once maxInFlight reviews are running", async () => {
    const release: Array<() => void> = [];
    const requests: ApiRequest[] = [];
    const client: KubeClient = {
      _tag: "KubeClient",
      server: "https://apiserver.invalid",
      request: (request) => {
        requests.push(request);
        return new Promise((resolve) =>
          release.push(() => resolve({ status: 201, body: { status: { authenticated: false } } })),
        );
      },
      watch: () => Promise.reject(new Error("no watches here")),
      close: () => {},
    };
    const access = makeMetricsAccess({ client, maxInFlight: 2 });
    const first = access.check("Bearer a");
    const second = access.check("Bearer b");
    expect(await access.check("Bearer c")).toEqual({ _tag: "Busy" });
    await vi.waitFor(() => expect(release).toHaveLength(2));
    expect(requests).toHaveLength(2);
    for (const done of release.splice(0)) done();
    expect((await first)._tag).toBe("Unauthenticated");
    expect((await second)._tag).toBe("Unauthenticated");
    const third = access.check("Bearer c"); // room again
    await vi.waitFor(() => expect(release).toHaveLength(1));
    for (const done of release.splice(0)) done();
    expect((await third)._tag).toBe("Unauthenticated");
    expect(requests).toHaveLength(3);
  });

  it("reads bearer tokens case-insensitively and nothing else", () => {
    expect(bearerToken("Bearer abc.def")).toBe("abc.def");
    expect(bearerToken("bearer   abc")).toBe("abc");
    expect(bearerToken("Bearer a b")).toBeUndefined();
    expect(bearerToken("Token abc")).toBeUndefined();
  });
});

describe("the self-signed serving certificate", () => {
  it("is a valid X.509 certificate for the given names, signed by its own key, valid for a year", () => {
    const now = new Date("2026-06-01T00:00:00Z");
    const { certPem } = selfSignedCertificate(["pod-1", "localhost", "127.0.0.1", "::1"], now);
    const certificate = new X509Certificate(certPem);
    expect(certificate.subject).toBe("CN=pod-1");
    expect(certificate.subjectAltName).toBe(
      "DNS:pod-1, DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1",
    );
    expect(certificate.verify(certificate.publicKey)).toBe(true);
    expect(certificate.ca).toBe(false);
    expect(certificate.checkHost("localhost")).toBe("localhost");
    expect(certificate.checkIP("::1")).toBe("::1");
    expect(new Date(certificate.validTo).getTime() - now.getTime()).toBe(365 * 86_400_000);
    expect(certificate.keyUsage).toEqual(["1.3.6.1.5.5.7.3.1"]); // extended key usage: TLS server
  });
});
