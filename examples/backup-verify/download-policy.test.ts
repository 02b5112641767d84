/**
 * The download policy: the controller's allow-list of hosts and its byte cap, read from its own
 * environment; a URL is allowed only when the URL parser fetch uses reads an allowed host in it.
 */
import { describe, expect, it } from "vitest";
import {
  DefaultMaxBytes,
  type DownloadPolicyShape,
  parseAllowedHosts,
  policyFromEnv,
  refusalOf,
} from "./download-policy.ts";

const policy: DownloadPolicyShape = {
  allowedHosts: ["backups.example", "minio.backup:9000", "[::1]:8080"],
  maxBytes: 1024,
};

describe("the allow-list, from the controller's environment", () => {
  it("reads hosts and host:port entries, normalised", () => {
    expect(parseAllowedHosts(" Backups.Example , minio.backup:9000,[::1]:8080")).toEqual({
      ok: true,
      value: ["backups.example", "minio.backup:9000", "[::1]:8080"],
    });
  });

  it("refuses an entry that is not a bare host, naming it and the variable", () => {
    for (const entry of ["https://backups.example", "backups.example/path", "*.example", "user@host"]) {
      const parsed = parseAllowedHosts(entry);
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) expect(parsed.error).toContain(`BACKUP_VERIFY_ALLOWED_HOSTS: ${JSON.stringify(entry)}`);
    }
  });

  it("stops the start without one: nothing is fetched by default", () => {
    const parsed = policyFromEnv({});
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.error).toMatch(/^BACKUP_VERIFY_ALLOWED_HOSTS is empty: name the hosts/);
  });

  it("caps the body at 1 GiB unless BACKUP_VERIFY_MAX_BYTES says otherwise", () => {
    expect(policyFromEnv({ BACKUP_VERIFY_ALLOWED_HOSTS: "a.example" })).toEqual({
      ok: true,
      value: { allowedHosts: ["a.example"], maxBytes: DefaultMaxBytes },
    });
    expect(
      policyFromEnv({ BACKUP_VERIFY_ALLOWED_HOSTS: "a.example", BACKUP_VERIFY_MAX_BYTES: "4096" }),
    ).toMatchObject({ ok: true, value: { maxBytes: 4096 } });
    expect(
      policyFromEnv({ BACKUP_VERIFY_ALLOWED_HOSTS: "a.example", BACKUP_VERIFY_MAX_BYTES: "1GB" }),
    ).toMatchObject({ ok: false, error: expect.stringContaining("BACKUP_VERIFY_MAX_BYTES") });
  });
});

describe("a URL is fetched only from an allowed host", () => {
  it.each([
    "https://backups.example/daily.tar",
    "http://BACKUPS.example:80/daily.tar",
    "https://backups.example:443/daily.tar",
    "http://minio.backup:9000/bucket/daily.tar",
    "http://[::1]:8080/daily.tar",
  ])("allows %s", (url) => {
    expect(refusalOf(url, policy)).toBeUndefined();
  });

  it.each([
    ["another host", "http://169.254.169.254/latest/meta-data/", "169.254.169.254:80"],
    ["an allowed name as userinfo", "http://backups.example@evil.example/x", "evil.example:80"],
    [
      "an allowed name as a subdomain",
      "http://backups.example.evil.example/x",
      "backups.example.evil.example:80",
    ],
    ["a host:port entry on another port", "http://minio.backup:9001/x", "minio.backup:9001"],
    [
      "a bare host entry on a port not its scheme's",
      "https://backups.example:8443/x",
      "backups.example:8443",
    ],
    ["loopback as a decimal number", "http://2130706433/x", "127.0.0.1:80"],
  ])("refuses %s, naming the field, the host and the fix", (_what, url, host) => {
    const refusal = refusalOf(url, policy);
    expect(refusal).toContain(`spec.config.checksum.url names host ${host}`);
    expect(refusal).toContain("ask the operator to add it to BACKUP_VERIFY_ALLOWED_HOSTS");
  });

  it("refuses what is not http(s)", () => {
    expect(refusalOf("file:///etc/passwd", policy)).toBe(
      "spec.config.checksum.url must be http:// or https://",
    );
  });
});
