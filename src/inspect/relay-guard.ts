/**
 * Who may talk to the inspection relay. It listens on loopback, but loopback is reachable from every
 * web page open in a browser on the same machine:
 *
 * - Host: a page on a name the attacker controls can re-point that name at 127.0.0.1 (DNS rebinding)
 *   and then read the relay as its own origin. Requests whose `Host` is not a loopback name
 *   (`localhost`, `127.0.0.1`, `[::1]`, with the relay's port or none) are refused.
 * - Origin: WebSockets are exempt from the same-origin policy, so any page may open one to
 *   ws://127.0.0.1:<port>; browsers always send its `Origin`. Only the relay's own page (an `http:`
 *   origin on a loopback name and the relay's port) may connect; clients without an `Origin` (not a
 *   browser: Node's WebSocket, a CLI) pass this check.
 * - Publishing: only a client that presents the relay's publish token (held by the controller's own
 *   socket adapter; never sent to a browser) may publish. Everyone else only receives, so a viewer
 *   cannot inject events that other viewers show. The token is compared in constant time.
 */
import { timingSafeEqual } from "node:crypto";

const loopbackNames = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** `name` or `name:port` of a loopback name, with this port or none. */
export const isLoopbackHost = (host: string | undefined, port: number): boolean => {
  if (host === undefined) return false;
  const match = /^(\[[^\]]*\]|[^:]*)(?::(\d+))?$/.exec(host.trim().toLowerCase());
  if (match === null) return false;
  const [, name = "", hostPort] = match;
  return loopbackNames.has(name) && (hostPort === undefined || Number(hostPort) === port);
};

/** No `Origin` (not a browser), or the relay's own page on a loopback name. */
export const isAllowedOrigin = (origin: string | undefined, port: number): boolean => {
  if (origin === undefined) return true;
  let parsed: URL;
  try {
    parsed = new URL(origin);
  } catch {
    return false;
  }
  return parsed.protocol === "http:" && isLoopbackHost(parsed.host, port) && parsed.port === String(port);
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
