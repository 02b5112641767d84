/**
 * The snapshot call (docs/contract.md §9): `POST http(s)://<host>:<port>/snapshot/<full|delta>`,
 * `?final=true` only when `isFinal`, no body, bounded by the type's timeout. The host is etcd-druid
 * v0.38.1's `GetClientHostname`: the client Service `<etcd>-client.<ns>.svc`, or, for an Etcd with
 * externally managed members, one of their addresses picked at random (each call picks again, as
 * druid's does, so a retry may reach another member).
 */
import { isIP } from "node:net";
import * as Effect from "effect/Effect";
import * as Random from "effect/Random";
import { isDns1123Subdomain } from "../../advanced.ts";
import type { PhaseOutcome } from "../../index.ts";
import type { OnDemandSnapshotConfig } from "../api/config/on-demand-snapshot.ts";
import {
  backupRestorePort,
  clientServiceName,
  type Etcd,
  ExternallyManagedField,
  externallyManagedMembers,
} from "../api/etcd.ts";
import { BackupRestoreHttp, type BackupRestoreRequest } from "../services.ts";
import { bodyReadFailure, requestFailure, statusFailure, successOutcome } from "./outcome.ts";
import { ErrorCodes, failed, type StepFailure } from "./step-failure.ts";

/** `<etcd>-client.<ns>.svc`: the host of the URL, the SNI and the name the certificate must carry. */
export const backupRestoreHost = (etcd: Etcd): string =>
  `${clientServiceName(etcd)}.${etcd.metadata.namespace}.svc`;

/** An IP address or a host name: what druid's API allows in a member address (no scheme, no port). */
const isMemberAddress = (address: string): boolean =>
  isIP(address) !== 0 || isDns1123Subdomain(address.toLowerCase());

/**
 * The host the snapshot goes to. An address that is no IP and no host name is refused before any
 * request: it would be spliced into the URL, where `evil.example/x?` or a userinfo part would send
 * the call somewhere else.
 */
export const snapshotHost = (etcd: Etcd): Effect.Effect<string, StepFailure> => {
  const members = externallyManagedMembers(etcd);
  if (members.length === 0) return Effect.succeed(backupRestoreHost(etcd));
  const bad = members.findIndex((address) => !isMemberAddress(address));
  if (bad >= 0)
    return Effect.fail(
      failed(
        "Etcd has an invalid externally managed member address",
        ErrorCodes.invalidMemberAddress,
        "invalid externally managed member address",
        `${ExternallyManagedField}[${bad}]: ${JSON.stringify(members[bad]).slice(0, 100)} is neither an IP address nor a host name; write the member's address without scheme or port`,
      ),
    );
  return Effect.map(
    Random.nextIntBetween(0, members.length, { halfOpen: true }),
    (index) => members[index] ?? "",
  );
};

/** The host as it stands in a URL: an IPv6 address in brackets. */
const urlHost = (host: string): string => (isIP(host) === 6 ? `[${host}]` : host);

export const snapshotUrl = (
  etcd: Etcd,
  config: OnDemandSnapshotConfig,
  secure: boolean,
  host: string = backupRestoreHost(etcd),
): string => {
  const scheme = secure ? "https" : "http";
  const query = config.isFinal === true ? "?final=true" : "";
  return `${scheme}://${urlHost(host)}:${backupRestorePort(etcd)}/snapshot/${config.type}${query}`;
};

/** The request to `host`; `ca` (PEM) is given exactly when the backup-restore server serves TLS. */
export const snapshotRequest = (
  etcd: Etcd,
  config: OnDemandSnapshotConfig,
  timeoutMs: number,
  ca: string | undefined,
  host: string = backupRestoreHost(etcd),
): BackupRestoreRequest => ({
  url: snapshotUrl(etcd, config, ca !== undefined, host),
  timeoutMs,
  servername: host,
  ...(ca === undefined ? {} : { ca }),
});

/** Sends the request and maps the answer; the connection is released before this completes. */
export const takeSnapshot = (
  config: OnDemandSnapshotConfig,
  request: BackupRestoreRequest,
): Effect.Effect<PhaseOutcome, StepFailure, BackupRestoreHttp> =>
  Effect.scoped(
    Effect.gen(function* () {
      const http = yield* BackupRestoreHttp;
      const response = yield* http.post(request).pipe(Effect.mapError(requestFailure));
      if (response.status !== 200) return yield* statusFailure(response.status);
      if (config.type === "full") return successOutcome("full", undefined);
      const body = yield* response.body().pipe(Effect.mapError(bodyReadFailure));
      return successOutcome("delta", body);
    }),
  );
