/**
 * Who may read the task board (src/ui/board-guard.ts): one rule per test, on plain requests.
 */
import { describe, expect, it } from "vitest";
import { allowedHosts, checkRequest, type GuardConfig, type GuardRequest } from "../../src/ui/board-guard.ts";

const token = "s3cret-token-of-the-board";
const config: GuardConfig = { hosts: allowedHosts("127.0.0.1"), token, cookie: "opstask_board_8090" };
const get = (url: string, headers: GuardRequest["headers"] = {}): GuardRequest => ({
  method: "GET",
  url,
  headers: { host: "127.0.0.1:8090", ...headers },
});
const withCookie = { cookie: `other=1; opstask_board_8090=${token}` };

describe("the task board's guard", () => {
  it("lets a request with the token cookie or a bearer token read", () => {
    expect(checkRequest(config, get("/api/tasks", withCookie))._tag).toBe("allow");
    expect(checkRequest(config, get("/api/tasks", { authorization: `Bearer ${token}` }))._tag).toBe("allow");
    expect(checkRequest(config, get("/", { ...withCookie, host: "localhost:8090" }))._tag).toBe("allow");
  });

  it("refuses a missing or wrong token", () => {
    expect(checkRequest(config, get("/api/tasks"))).toMatchObject({ _tag: "refuse", status: 401 });
    expect(checkRequest(config, get("/"))).toMatchObject({ _tag: "refuse", status: 401 });
    expect(checkRequest(config, get("/api/tasks", { cookie: "opstask_board_8090=guess" }))).toMatchObject({
      status: 401,
    });
    expect(checkRequest(config, get("/api/tasks", { authorization: "Bearer guess" }))).toMatchObject({
      status: 401,
    });
  });

  it("trades a valid ?token= on a page for the cookie, and drops it from the address", () => {
    expect(checkRequest(config, get(`/?token=${token}`))).toEqual({ _tag: "login", location: "/" });
    expect(checkRequest(config, get(`/?token=${token}&x=1`))).toEqual({ _tag: "login", location: "/?x=1" });
    expect(checkRequest(config, get("/?token=guess"))).toMatchObject({ _tag: "refuse", status: 401 });
    // Data endpoints take the token as a header or cookie only (a URL ends up in logs and histories).
    expect(checkRequest(config, get(`/api/tasks?token=${token}`))).toMatchObject({ status: 401 });
  });

  it("refuses another site's Origin even with the cookie", () => {
    const foreign = { ...withCookie, origin: "http://127.0.0.1:9999" };
    expect(checkRequest(config, get("/api/tasks", foreign))).toMatchObject({ _tag: "refuse", status: 403 });
    expect(checkRequest(config, get("/api/events", { ...withCookie, origin: "null" }))).toMatchObject({
      status: 403,
    });
    expect(
      checkRequest(config, get("/api/tasks", { ...withCookie, origin: "http://127.0.0.1:8090" }))._tag,
    ).toBe("allow");
  });

  it("refuses data requests that the browser marks as coming from another site", () => {
    for (const site of ["cross-site", "same-site"])
      expect(
        checkRequest(config, get("/api/tasks", { ...withCookie, "sec-fetch-site": site })),
      ).toMatchObject({
        status: 403,
      });
    expect(
      checkRequest(config, get("/api/tasks", { ...withCookie, "sec-fetch-site": "same-origin" }))._tag,
    ).toBe("allow");
  });

  it("refuses a Host that is not the board's address (DNS rebinding)", () => {
    expect(
      checkRequest(config, get("/api/tasks", { ...withCookie, host: "evil.example:8090" })),
    ).toMatchObject({
      status: 403,
    });
    expect(checkRequest(config, get("/api/tasks", { ...withCookie, host: "evil.example" }))).toMatchObject({
      status: 403,
    });
    // Any port of a loopback name: a port-forward from another local port still works.
    expect(checkRequest(config, get("/api/tasks", { ...withCookie, host: "localhost:18090" }))._tag).toBe(
      "allow",
    );
    expect(checkRequest(config, get("/api/tasks", { ...withCookie, host: "[::1]:8090" }))._tag).toBe("allow");
    expect(allowedHosts("0.0.0.0")).toBeUndefined();
  });

  it("takes no input: anything but GET and HEAD is refused", () => {
    for (const method of ["POST", "PUT", "DELETE", "PATCH"])
      expect(checkRequest(config, { ...get("/api/tasks", withCookie), method })).toMatchObject({
        status: 405,
      });
  });
});
