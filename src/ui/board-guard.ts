/**
 * Who may read the task board: the checks every request passes before anything is served, pure (method
 * and headers in, a verdict out). Host is a name the board is reachable by (any port); a browser's
 * Origin is the board's own and a data request's `Sec-Fetch-Site` is `same-origin` (or absent/`none`);
 * data (`/api/…`) needs the token printed at start as `Authorization: Bearer`; the page and its assets,
 * code without data, are served without it but a wrong `?token=` on them is refused; and only GET and
 * HEAD. Why a header and never a cookie, and why each check: docs/design-notes.md §19.
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
