/**
 * Who may talk to the inspection relay. It listens on loopback, but loopback is reachable from every
 * web page open in a browser on the same machine:
 *
 * - Host: a page on a name the attacker controls can re-point that name at 127.0.0.1 (DNS rebinding)
 *   and then read the relay as its own origin. Requests whose `Host` is not a loopback name
 *   (`localhost`, `127.0.0.1`, `[::1]`) are refused. Any port: through `kubectl port-forward` the
 *   browser's port is not the relay's.
 * - Origin: WebSockets are exempt from the same-origin policy, so any page may open one to
 *   ws://127.0.0.1:<port>; browsers always send its `Origin`. Only the relay's own page may connect:
 *   an `http:` origin equal to the request's own (loopback) Host, which is what the page's
 *   `location.host` gives. Clients without an `Origin` (not a browser: Node's WebSocket, a CLI) pass.
 * - Publishing: only a client that presents the relay's publish token (held by the controller's own
 *   socket adapter; never sent to a browser) may publish. Everyone else only receives, so a viewer
 *   cannot inject events that other viewers show. The token is compared in constant time.
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
