/**
 * Where the checksum handler may download from, and how much it reads: the controller's own
 * configuration (main.ts reads it from its environment), never the task's. A task author names a
 * URL; without this policy the controller would fetch any URL for anyone who may create a task (the
 * cluster's metadata endpoint, an internal admin page): server-side request forgery. So:
 *
 * - only hosts on the operator's allow-list are fetched: `host` on its scheme's default port (80,
 *   443), `host:port` on that port (so an allowed host's other services are not reachable either);
 * - redirects are never followed (a redirect is an answer naming another URL; the task must name the
 *   final one), so an allowed host cannot bounce the controller elsewhere;
 * - the body is read up to `maxBytes`, then the download stops with an error.
 *
 * Hosts are compared as the WHATWG URL parser reads them (lowercase, IP forms normalised, userinfo
 * split off), the same parser fetch uses, so `http://allowed@evil/` is `evil`.
 */
import * as Context from "effect/Context";
import * as Layer from "effect/Layer";

export interface DownloadPolicyShape {
  /** `host` or `host:port` entries, normalised by `parseAllowedHosts`. */
  readonly allowedHosts: ReadonlyArray<string>;
  /** The most bytes of one backup the handler reads. */
  readonly maxBytes: number;
}

export class DownloadPolicy extends Context.Service<DownloadPolicy, DownloadPolicyShape>()(
  "examples/backup-verify/DownloadPolicy",
) {}

export const downloadPolicyLayer = (policy: DownloadPolicyShape) => Layer.succeed(DownloadPolicy, policy);

/** The environment variables main.ts reads the policy from (named in every refusal). */
export const AllowedHostsEnv = "BACKUP_VERIFY_ALLOWED_HOSTS";
export const MaxBytesEnv = "BACKUP_VERIFY_MAX_BYTES";

/** 1 GiB: a backup larger than this is refused unless the operator raises `BACKUP_VERIFY_MAX_BYTES`. */
export const DefaultMaxBytes = 1024 ** 3;

export type Parsed<A> =
  | { readonly ok: true; readonly value: A }
  | { readonly ok: false; readonly error: string };

/** `host` → `host`, `Host:443` → `host:443`; undefined for anything that is not a bare host[:port]. */
const normaliseEntry = (entry: string): string | undefined => {
  if (!/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/.test(entry)) return undefined;
  try {
    const url = new URL(`http://${entry}`);
    return entry.includes(":") && !entry.endsWith("]")
      ? `${url.hostname}:${entry.slice(entry.lastIndexOf(":") + 1)}`
      : url.hostname;
  } catch {
    return undefined;
  }
};

/** The allow-list from its comma-separated form; an entry that is not a host or host:port is an error. */
export const parseAllowedHosts = (raw: string): Parsed<ReadonlyArray<string>> => {
  const entries = raw
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
  if (entries.length === 0)
    return {
      ok: false,
      error: `${AllowedHostsEnv} is empty: name the hosts backups may be downloaded from, comma-separated (e.g. backups.example,minio.backup:9000)`,
    };
  const hosts: string[] = [];
  for (const entry of entries) {
    const host = normaliseEntry(entry);
    if (host === undefined)
      return {
        ok: false,
        error: `${AllowedHostsEnv}: ${JSON.stringify(entry)} is not a host or host:port (no scheme, path or wildcard), e.g. backups.example or minio.backup:9000`,
      };
    hosts.push(host);
  }
  return { ok: true, value: hosts };
};

/** A byte count ≥ 1 from its decimal form. */
export const parseMaxBytes = (raw: string): Parsed<number> => {
  const bytes = /^\d{1,15}$/.test(raw.trim()) ? Number(raw.trim()) : Number.NaN;
  return bytes >= 1
    ? { ok: true, value: bytes }
    : {
        ok: false,
        error: `${MaxBytesEnv}: ${JSON.stringify(raw)} is not a byte count ≥ 1 (e.g. 1073741824)`,
      };
};

/** The policy from the controller's environment. */
export const policyFromEnv = (env: NodeJS.ProcessEnv): Parsed<DownloadPolicyShape> => {
  const hosts = parseAllowedHosts(env[AllowedHostsEnv] ?? "");
  if (!hosts.ok) return hosts;
  const rawMax = env[MaxBytesEnv];
  const max = rawMax === undefined ? ({ ok: true, value: DefaultMaxBytes } as const) : parseMaxBytes(rawMax);
  if (!max.ok) return max;
  return { ok: true, value: { allowedHosts: hosts.value, maxBytes: max.value } };
};

const defaultPorts: Record<string, string> = { "http:": "80", "https:": "443" };

/**
 * Why the policy refuses to fetch `url`, or undefined when it may. The text names the field, the host
 * and the fix.
 */
export const refusalOf = (url: string, policy: DownloadPolicyShape): string | undefined => {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "spec.config.checksum.url is not a URL: name an http:// or https:// URL";
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:")
    return "spec.config.checksum.url must be http:// or https://";
  // The parser leaves `port` empty for the scheme's default port.
  const port = parsed.port === "" ? (defaultPorts[parsed.protocol] ?? "") : parsed.port;
  const allowed = policy.allowedHosts.some(
    (entry) => (entry === parsed.hostname && parsed.port === "") || entry === `${parsed.hostname}:${port}`,
  );
  if (allowed) return undefined;
  const host = `${parsed.hostname}:${port}`.slice(0, 100);
  return `spec.config.checksum.url names host ${host}, which this controller does not download from (allowed: ${policy.allowedHosts.join(", ")}): name a URL on an allowed host, or ask the operator to add it to ${AllowedHostsEnv}`;
};
