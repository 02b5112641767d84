/**
 * Where the maintenance calls go. The client endpoint is the Etcd's client Service as druid names it,
 * `<scheme>://<etcd>-client.<ns>:<clientPort>` (no `.svc`, like the snapshot URL: it resolves through
 * the cluster DNS search path or a `--resolve` rule); https exactly when `spec.etcd.clientUrlTls` is set.
 *
 * Defragmentation must reach every member, not whichever one the Service picks. With one member the
 * Service can only pick that member, so its endpoint is used (a single member may advertise a URL that
 * only works inside its pod). With several, each member is called at the first client URL it
 * advertises that is one of the Etcd's own endpoints: the scheme and client port of the client
 * endpoint, and a host that is one of the Etcd's pods under its peer Service as druid names them
 * (`<etcd>-<ordinal>.<etcd>-peer.<ns>`, optionally `.svc` or `.svc.cluster.local`; druid advertises
 * `.svc`; another cluster domain is not accepted, as it could be a public one). Whatever else a
 * member reports (an IP address, loopback, link-local, another host) is never called: the controller
 * would otherwise send requests wherever an etcd's configuration points. Those hosts can be mapped
 * with `--resolve` rules too. Learners are skipped: etcd serves them only Status and serializable
 * reads, so defragmenting one fails ("rpc not supported for learner").
 */
import * as Result from "effect/Result";
import { capText, MaxEchoLength } from "../../advanced.ts";
import { clientServiceName, type Etcd, etcdClientPort } from "../api/etcd.ts";
import type { EtcdClientTls, EtcdEndpoint, EtcdMember } from "../etcd-client.ts";

/** `<etcd>-client.<ns>`: the host of the URL, the SNI and the name the server certificate must carry. */
export const etcdClientHost = (etcd: Etcd): string => `${clientServiceName(etcd)}.${etcd.metadata.namespace}`;

export const etcdClientUrl = (etcd: Etcd, secure: boolean): string =>
  `${secure ? "https" : "http"}://${etcdClientHost(etcd)}:${etcdClientPort(etcd)}`;

/** The client endpoint; `tls` is given exactly when etcd serves client TLS. */
export const clientEndpoint = (
  etcd: Etcd,
  timeoutMs: number,
  tls: EtcdClientTls | undefined,
): EtcdEndpoint => ({
  url: etcdClientUrl(etcd, tls !== undefined),
  timeoutMs,
  ...(tls === undefined ? {} : { tls }),
});

/** One member to defragment and where to reach it. */
export interface DefragmentTarget {
  readonly member: EtcdMember;
  readonly endpoint: EtcdEndpoint;
}

export interface DefragmentPlan {
  readonly targets: ReadonlyArray<DefragmentTarget>;
  readonly learnersSkipped: number;
}

/** The member's name, or `member <id>` before it has started and has none. */
export const memberName = (member: EtcdMember): string =>
  member.name === "" ? `member ${member.id}` : member.name;

const memberLabel = (member: EtcdMember): string =>
  member.name === "" ? `member ${member.id}` : `member ${member.name} (${member.id})`;

const escapeRegExp = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Whether `raw` is a client URL of one of the Etcd's own members (see the module comment). */
export const isOwnMemberUrl = (etcd: Etcd, client: EtcdEndpoint, raw: string): boolean => {
  if (!URL.canParse(raw)) return false;
  const url = new URL(raw);
  const expected = new URL(client.url);
  if (url.protocol !== expected.protocol || url.username !== "" || url.password !== "") return false;
  if (url.port !== String(etcdClientPort(etcd)) || !(url.pathname === "/" || url.pathname === ""))
    return false;
  if (url.search !== "" || url.hash !== "") return false;
  const name = escapeRegExp(etcd.metadata.name);
  const namespace = escapeRegExp(etcd.metadata.namespace);
  const own = new RegExp(`^${name}-\\d{1,5}\\.${name}-peer\\.${namespace}(\\.svc(\\.cluster\\.local)?)?$`);
  return own.test(url.hostname);
};

/** Why a plan cannot be made: `retry` when the cluster may get there (a member starting), else `failed`. */
export interface PlanProblem {
  readonly verdict: "retry" | "failed";
  readonly reason: string;
}

/** The members to defragment, one at a time, in member-list order; fails when one cannot be reached. */
export const defragmentPlan = (
  members: ReadonlyArray<EtcdMember>,
  client: EtcdEndpoint,
  etcd: Etcd,
): Result.Result<DefragmentPlan, PlanProblem> => {
  const voters = members.filter((member) => !member.isLearner);
  const learnersSkipped = members.length - voters.length;
  const [only] = voters;
  if (only === undefined)
    return Result.fail({ verdict: "retry", reason: "the member list has no voting member" });
  if (members.length === 1)
    return Result.succeed({ targets: [{ member: only, endpoint: client }], learnersSkipped });
  const starting = voters.find((member) => member.clientUrls.length === 0);
  if (starting !== undefined)
    return Result.fail({
      verdict: "retry",
      reason: `${memberLabel(starting)} has no client URL (not started yet?)`,
    });
  const targets: DefragmentTarget[] = [];
  for (const member of voters) {
    if (member.clientUrls.length === 0)
      return Result.fail({
        verdict: "retry",
        reason: `${memberLabel(member)} has no client URL (not started yet?)`,
      });
    const url = member.clientUrls.find((each) => isOwnMemberUrl(etcd, client, each));
    if (url === undefined) {
      const reported = capText(
        member.clientUrls.map((each) => JSON.stringify(each)).join(", "),
        MaxEchoLength * 3,
      );
      const expected = `${new URL(client.url).protocol}//${etcd.metadata.name}-<ordinal>.${etcd.metadata.name}-peer.${etcd.metadata.namespace}[.svc]:${etcdClientPort(etcd)}`;
      return Result.fail({
        verdict: "failed",
        reason: `${capText(memberLabel(member), MaxEchoLength)} advertises no client URL of Etcd ${etcd.metadata.name} (${reported}); expected ${expected}`,
      });
    }
    targets.push({ member, endpoint: { ...client, url } });
  }
  return Result.succeed({ targets, learnersSkipped });
};

export const targetLabel = (target: DefragmentTarget): string =>
  `${memberLabel(target.member)} at ${target.endpoint.url}`;
