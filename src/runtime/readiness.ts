/**
 * What `/readyz` answers for `opstask controller`: undefined when ready, else why not.
 *
 * - A leader is ready once its caches hold the first LIST; a standby is ready (healthy, waiting for the
 *   Lease).
 * - Either is not ready once it has lost contact with the API server (no answered request, see
 *   runtime/api-contact.ts) for `apiLostGraceMs`, and ready again at the first answered request.
 *
 * The choice: readiness, not liveness, because a restart does not bring the API server back, and
 * losing the Lease already ends a leader that cannot renew it. The grace period of 30 s rides out a
 * kube-apiserver restart or a short network blip (seconds) without flapping; with the Deployment's
 * probe (every 5 s, 3 failures) a pod shows NotReady about 45 s into an outage, which is what an
 * operator sees in `kubectl get pods`, and what alerts on unready pods pick up.
 */
export const apiLostGraceMs = 30_000;

export interface ReadinessState {
  readonly leading: boolean;
  readonly synced: number;
  readonly caches: number;
  /** How long the API server has not answered (0 while it does). */
  readonly apiLostForMs: number;
}

export const notReadyReason = (state: ReadinessState): string | undefined => {
  if (state.apiLostForMs >= apiLostGraceMs)
    return `no answer from the API server for ${Math.floor(state.apiLostForMs / 1000)} s`;
  if (state.leading && state.synced < state.caches)
    return `caches not synced (${state.synced}/${state.caches})`;
  return undefined;
};
