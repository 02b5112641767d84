/**
 * A `metav1.MicroTime` as the apiserver wants it: RFC 3339 with exactly six fractional digits (a
 * millisecond clock gives three; the rest are zeros), e.g. `2026-11-22T03:06:48.123000Z`.
 */
export const microTime = (ms: number): string => new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
