/**
 * The controller's curl-style `--resolve HOST:PORT:ADDRESS` rules, shared by the backup-restore and
 * etcd clients: only where a connection goes changes; the URL, `Host`, SNI and certificate check keep
 * HOST, so a controller outside the cluster (or a test) reaches `<etcd>-client.<ns>.svc` without its DNS.
 *
 * A rule for `NAME` also routes `NAME.svc` when no rule names `NAME.svc` itself: the snapshot call
 * dialled `<etcd>-client.<ns>` before it followed etcd-druid v0.38.1 to `<etcd>-client.<ns>.svc`, and the
 * rules written for that name keep working.
 */
import { isIP, type LookupFunction } from "node:net";
import * as Result from "effect/Result";

/** Connect to `address` instead of resolving `host`, for requests to `host:port` (`"*"`: any port). */
export interface ResolveOverride {
  readonly host: string;
  readonly port: number | "*";
  readonly address: string;
}

/** A lookup that answers `address` for whatever is asked (it is only used for the overridden host). */
const fixedLookup =
  (address: string): LookupFunction =>
  (_hostname, options, callback) => {
    const family = isIP(address);
    if (options.all === true) callback(null, [{ address, family }]);
    else callback(null, address, family);
  };

// Each call dials through the rules, and an operator may give one per Etcd (a thousand): they are
// indexed by host once per list, so a call costs one Map lookup instead of a scan of every rule.
const indexes = new WeakMap<
  ReadonlyArray<ResolveOverride>,
  ReadonlyMap<string, ReadonlyArray<ResolveOverride>>
>();

const indexOf = (
  resolve: ReadonlyArray<ResolveOverride>,
): ReadonlyMap<string, ReadonlyArray<ResolveOverride>> => {
  const known = indexes.get(resolve);
  if (known !== undefined) return known;
  const index = new Map<string, ResolveOverride[]>();
  for (const rule of resolve) {
    const host = rule.host.toLowerCase();
    index.set(host, [...(index.get(host) ?? []), rule]);
  }
  indexes.set(resolve, index);
  return index;
};

const svcSuffix = ".svc";

/**
 * The lookup to dial `host:port` with: undefined when no rule matches (normal DNS), a fixed answer when
 * one does (host compared case-insensitively, `"*"` matching any port; the first match wins, a rule
 * for the host itself before one for the name without `.svc`). Fails with
 * a message when the matching rule's address is not an IP address.
 */
export const dialLookup = (
  resolve: ReadonlyArray<ResolveOverride>,
  host: string,
  port: number,
): Result.Result<LookupFunction | undefined, string> => {
  const index = indexOf(resolve);
  const name = host.toLowerCase();
  const matching = (candidate: string) =>
    index.get(candidate)?.find((entry) => entry.port === "*" || entry.port === port);
  const rule =
    matching(name) ?? (name.endsWith(svcSuffix) ? matching(name.slice(0, -svcSuffix.length)) : undefined);
  if (rule === undefined) return Result.succeed(undefined);
  return isIP(rule.address) === 0
    ? Result.fail(`resolve override for ${rule.host}: "${rule.address}" is not an IP address`)
    : Result.succeed(fixedLookup(rule.address));
};
