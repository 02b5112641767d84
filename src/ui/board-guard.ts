/**
 * Who may read the task board: the checks every request passes before anything is served. Pure (a
 * request's method and headers in, a verdict out), so each rule is tested without a socket.
 *
 * - Host: one of the names the board is reachable by (loopback names when bound to loopback), so that
 *   a DNS-rebinding page on another site cannot read it through a name of its own; any port, so that
 *   a port-forward to another local port works;
 * - Origin, when the browser sends one, is the board's own; `Sec-Fetch-Site` of a data request is
 *   `same-origin` (or absent/`none` for tools): other sites' pages get nothing, not even over SSE;
 * - data (`/api/…`) needs the token printed at start, as an `Authorization: Bearer` header, from tools
 *   and from the page alike. The page takes it from its `?token=` and keeps it in sessionStorage, which
 *   browsers scope to the page's origin, port included. Never a cookie: cookies ignore ports (RFC 6265
 *   §8.5), so a board cookie on 127.0.0.1 would reach every other server on 127.0.0.1 the browser visits;
 *   a header is sent only by the page's own requests. The page and its assets are code without data,
 *   served without the token (a reload of the page, whose address no longer shows it, must load);
 *   a wrong `?token=` on them is refused, so a mistyped URL says so at once;
 * - reads only (GET, HEAD): the board takes no input that could reach another viewer.
 */
import { timingSafeEqual } from "node:crypto";

export interface GuardConfig {
  /** Host names accepted in the Host header (its port aside); undefined accepts any (a wildcard bind). */
  readonly hosts: ReadonlySet<string> | undefined;
  readonly token: string;
}

export interface GuardRequest {
  readonly method: string;
  /** The path with its query. */
  readonly url: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
}

export type Verdict =
  | { readonly _tag: "allow" }
  | { readonly _tag: "refuse"; readonly status: 400 | 401 | 403 | 405; readonly reason: string };

const header = (request: GuardRequest, name: string): string | undefined => {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
};

const sameToken = (given: string, token: string): boolean => {
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
};

/** The names a server bound to `host` answers to (undefined: any, for a wildcard address). */
export const allowedHosts = (host: string): ReadonlySet<string> | undefined => {
  if (host === "0.0.0.0" || host === "::" || host === "") return undefined;
  return new Set(["127.0.0.1", "localhost", "[::1]", host.includes(":") ? `[${host}]` : host.toLowerCase()]);
};

/** The name in a Host header, without its port: `[::1]:80` → `[::1]`. */
export const hostName = (host: string): string => host.replace(/:\d*$/, "");

export const checkRequest = (config: GuardConfig, request: GuardRequest): Verdict => {
  if (request.method !== "GET" && request.method !== "HEAD")
    return { _tag: "refuse", status: 405, reason: "the board is read-only: GET and HEAD only" };
  const host = header(request, "host")?.toLowerCase();
  if (host === undefined) return { _tag: "refuse", status: 400, reason: "no Host header" };
  if (config.hosts !== undefined && !config.hosts.has(hostName(host)))
    return { _tag: "refuse", status: 403, reason: `Host ${host} is not this board's address` };
  const origin = header(request, "origin");
  if (origin !== undefined && origin !== `http://${host}`)
    return { _tag: "refuse", status: 403, reason: `Origin ${origin} may not read this board` };
  const url = new URL(request.url, `http://${host}`);
  const isData = url.pathname.startsWith("/api/");
  const site = header(request, "sec-fetch-site");
  if (isData && site !== undefined && site !== "same-origin" && site !== "none")
    return { _tag: "refuse", status: 403, reason: `a ${site} request may not read this board` };
  if (!isData) {
    const queryToken = url.searchParams.get("token");
    return queryToken === null || sameToken(queryToken, config.token)
      ? { _tag: "allow" }
      : { _tag: "refuse", status: 401, reason: "wrong token: open the URL the controller printed" };
  }
  const given = /^Bearer (.+)$/i.exec(header(request, "authorization") ?? "")?.[1];
  if (given === undefined || !sameToken(given, config.token))
    return {
      _tag: "refuse",
      status: 401,
      reason:
        "a token is needed: open the URL the controller printed (…/?token=…), or send Authorization: Bearer <token>",
    };
  return { _tag: "allow" };
};
