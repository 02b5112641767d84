/**
 * Where the maintenance calls go. The client endpoint is the Etcd's client Service as druid names it,
 * `<scheme>://<etcd>-client.<ns>:<clientPort>` (no `.svc`, like the snapshot URL: it resolves through
 * the cluster DNS search path or a `--resolve` rule); https exactly when `spec.etcd.clientUrlTls` is set.
 *
 * Defragmentation must reach every member, not whichever one the Service picks. With one member the
 * Service can only pick that member, so its endpoint is used (a single member may advertise a URL that
 * only works inside its pod). With several, each member is called at its first advertised client URL;
 * those hosts can be mapped with `--resolve` rules too. Learners are skipped: etcd serves them only
 * Status and serializable reads, so defragmenting one fails ("rpc not supported for learner").
 */
import * as Result from "effect/Result";
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

const memberLabel = (member: EtcdMember): string =>
  member.name === "" ? `member ${member.id}` : `member ${member.name} (${member.id})`;

/** The members to defragment, one at a time, in member-list order; fails when one cannot be reached. */
export const defragmentPlan = (
  members: ReadonlyArray<EtcdMember>,
  client: EtcdEndpoint,
): Result.Result<DefragmentPlan, string> => {
  const voters = members.filter((member) => !member.isLearner);
  const learnersSkipped = members.length - voters.length;
  const [only] = voters;
  if (only === undefined) return Result.fail("the member list has no voting member");
  if (members.length === 1)
    return Result.succeed({ targets: [{ member: only, endpoint: client }], learnersSkipped });
  const targets: DefragmentTarget[] = [];
  for (const member of voters) {
    const url = member.clientUrls[0];
    if (url === undefined) return Result.fail(`${memberLabel(member)} has no client URL (not started yet?)`);
    targets.push({ member, endpoint: { ...client, url } });
  }
  return Result.succeed({ targets, learnersSkipped });
};

export const targetLabel = (target: DefragmentTarget): string =>
  `${memberLabel(target.member)} at ${target.endpoint.url}`;
