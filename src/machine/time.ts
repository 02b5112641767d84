/** Wire time: RFC 3339 with whole seconds, as Kubernetes serialises `metav1.Time`. */
export const toWireTime = (ms: number): string => `${new Date(ms).toISOString().slice(0, 19)}Z`;

/** Parses wire time; an unparsable value counts as the epoch, which makes every deadline due. */
export const fromWireTime = (value: string | undefined): number | undefined => {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? 0 : ms;
};
