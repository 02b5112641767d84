/**
 * Who may talk to the inspection relay (why these checks: docs/design-notes.md §16): a `Host` that is a
 * loopback name, any port; an `Origin`, when sent, that is the relay's own `http:` page on that Host
 * (clients without one, not browsers, pass); publishing only with the relay's publish token, and a
 * viewer place of its own only with its viewer token (both compared in constant time). Everyone else
 * only receives, in the places left to anonymous viewers.
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

/** The query parameter of the developer's own viewers' token (`/?view=`); the page takes it from its `#view=`. */
export const ViewParameter = "view";

const parseRequestUrl = (url: string | undefined): URL | undefined => {
  if (url === undefined) return undefined;
  try {
    return new URL(url, "http://relay");
  } catch {
    return undefined;
  }
};

/** `url`'s path is `path` and its query parameter `parameter` matches `expected` (constant-time compare). */
const presentsQueryToken = (
  url: string | undefined,
  path: string,
  parameter: string,
  expected: string,
): boolean => {
  const parsed = parseRequestUrl(url);
  if (parsed === undefined || parsed.pathname !== path) return false;
  const given = Buffer.from(parsed.searchParams.get(parameter) ?? "");
  const wanted = Buffer.from(expected);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
};

/** The request's publish token matches `expected`. */
export const presentsToken = (url: string | undefined, expected: string): boolean =>
  presentsQueryToken(url, PublishPath, "token", expected);

/** The request is a viewer's that names a viewer token (right or wrong). */
export const namesViewToken = (url: string | undefined): boolean =>
  parseRequestUrl(url)?.searchParams.has(ViewParameter) === true;

/** The request's viewer token matches `expected`: the developer's own viewer. */
export const presentsViewToken = (url: string | undefined, expected: string): boolean =>
  presentsQueryToken(url, "/", ViewParameter, expected);
