/**
 * Who may talk to the inspection relay (why these checks: docs/design-notes.md §16): a `Host` that is a
 * loopback name, any port; an `Origin`, when sent, that is the relay's own `http:` page on that Host
 * (clients without one, not browsers, pass); and publishing only with the relay's publish token,
 * compared in constant time. Everyone else only receives.
 */
import { timingSafeEqual } from "node:crypto";

const loopbackNames = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** `name` or `name:port` of a loopback name. */
export const isLoopbackHost = (host: string | undefined): boolean => {
  if (host === undefined) return false;
  const match = /^(\[[^\]]*\]|[^:]*)(?::\d+)?$/.exec(host.trim().toLowerCase());
  return match !== null && loopbackNames.has(match[1] ?? "");
};

/** No `Origin` (not a browser), or an `http:` origin on the very (loopback) host and port requested. */
export const isAllowedOrigin = (origin: string | undefined, host: string | undefined): boolean => {
  if (origin === undefined) return true;
  if (host === undefined || !isLoopbackHost(host)) return false;
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    return false;
  }
  return parsed.protocol === "http:" && parsed.host === new URL(`http://${host.trim().toLowerCase()}`).host;
};

/** The path a publisher connects to; its token rides in the query (`?token=`). */
export const PublishPath = "/publish";

/** The request's publish token matches `expected` (constant-time compare). */
export const presentsToken = (url: string | undefined, expected: string): boolean => {
  if (url === undefined) return false;
  let parsed: URL;
  try {
    parsed = new URL(url, "http://relay");
  } catch {
    return false;
  }
  if (parsed.pathname !== PublishPath) return false;
  const given = Buffer.from(parsed.searchParams.get("token") ?? "");
  const wanted = Buffer.from(expected);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
};
