/**
 * The snapshot call (docs/contract.md §9): `POST http(s)://<etcd>-client.<ns>:<port>/snapshot/<full|delta>`,
 * `?final=true` only when `isFinal`, no body, bounded by the type's timeout. The host has no `.svc`
 * suffix, as in druid: it resolves through the cluster DNS search path (or a resolve override).
 */
import * as Effect from "effect/Effect";
import type { PhaseOutcome } from "../../index.ts";
import type { OnDemandSnapshotConfig } from "../api/config/on-demand-snapshot.ts";
import { backupRestorePort, clientServiceName, type Etcd } from "../api/etcd.ts";
import { BackupRestoreHttp, type BackupRestoreRequest } from "../services.ts";
import { bodyReadFailure, requestFailure, statusFailure, successOutcome } from "./outcome.ts";
import type { StepFailure } from "./step-failure.ts";

/** `<etcd>-client.<ns>`: the host of the URL, the SNI and the name the certificate must carry. */
export const backupRestoreHost = (etcd: Etcd): string =>
  `${clientServiceName(etcd)}.${etcd.metadata.namespace}`;

export const snapshotUrl = (etcd: Etcd, config: OnDemandSnapshotConfig, secure: boolean): string => {
  const scheme = secure ? "https" : "http";
  const query = config.isFinal === true ? "?final=true" : "";
  return `${scheme}://${backupRestoreHost(etcd)}:${backupRestorePort(etcd)}/snapshot/${config.type}${query}`;
};

/** The request; `ca` (PEM) is given exactly when the backup-restore server serves TLS. */
export const snapshotRequest = (
  etcd: Etcd,
  config: OnDemandSnapshotConfig,
  timeoutMs: number,
  ca: string | undefined,
): BackupRestoreRequest => ({
  url: snapshotUrl(etcd, config, ca !== undefined),
  timeoutMs,
  servername: backupRestoreHost(etcd),
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
