/**
 * What `/readyz` answers for `opstask controller`: undefined when ready, else why not. A leader is
 * ready once its caches hold the first LIST, a standby at once; either is not ready after
 * `apiLostGraceMs` without contact to the API server (src/runtime/api-contact.ts), and ready again at the
 * first answered request. Why readiness and not liveness, and why 30 s: docs/design-notes.md §13.
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
