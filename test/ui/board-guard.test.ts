/**
 * Who may read the task board (src/ui/board-guard.ts): one rule per test, on plain requests.
 */
import { describe, expect, it } from "vitest";
import { allowedHosts, checkRequest, type GuardConfig, type GuardRequest } from "../../src/ui/board-guard.ts";

const token = "s3cret-token-of-the-board";
const config: GuardConfig = { hosts: allowedHosts("127.0.0.1"), token };
const get = (url: string, headers: GuardRequest["headers"] = {}): GuardRequest => ({
  method: "GET",
  url,
  headers: { host: "127.0.0.1:8090", ...headers },
});
const withToken = { authorization: `Bearer ${token}` };

describe("the task board's guard", () => {
  it("lets a data request with the bearer token read", () => {
    expect(checkRequest(config, get("/api/tasks", { authorization: `Bearer ${token}` }))._tag).toBe("allow");
    expect(checkRequest(config, get("/api/events", { authorization: `bearer ${token}` }))._tag).toBe("allow");
  });

  it("refuses data without the token, or with a wrong one", () => {
    expect(checkRequest(config, get("/api/tasks"))).toMatchObject({ _tag: "refuse", status: 401 });
    expect(checkRequest(config, get("/api/tasks", { authorization: "Bearer guess" }))).toMatchObject({
      status: 401,
    });
    // Data endpoints take the token as a header only (a URL ends up in logs and histories).
    expect(checkRequest(config, get(`/api/tasks?token=${token}`))).toMatchObject({ status: 401 });
  });

  it("takes no cookie as the token: a cookie on 127.0.0.1 would reach every local port", () => {
    for (const cookie of [`opstask_board_8090=${token}`, `opstask_board=${token}`, `token=${token}`])
      expect(checkRequest(config, get("/api/tasks", { cookie }))).toMatchObject({ status: 401 });
  });

  it("serves the page and its assets (code, no data) without a token, and refuses a wrong ?token=", () => {
    for (const path of ["/", "/board.js", "/board.css", `/?token=${token}`])
      expect(checkRequest(config, get(path, { host: "localhost:8090" }))._tag).toBe("allow");
    expect(checkRequest(config, get("/?token=guess"))).toMatchObject({ _tag: "refuse", status: 401 });
  });

  it("refuses another site's Origin even with the token", () => {
    const foreign = { ...withToken, origin: "http://127.0.0.1:9999" };
    expect(checkRequest(config, get("/api/tasks", foreign))).toMatchObject({ _tag: "refuse", status: 403 });
    expect(checkRequest(config, get("/api/events", { ...withToken, origin: "null" }))).toMatchObject({
      status: 403,
    });
    expect(
      checkRequest(config, get("/api/tasks", { ...withToken, origin: "http://127.0.0.1:8090" }))._tag,
    ).toBe("allow");
  });

  it("refuses data requests that the browser marks as coming from another site", () => {
    for (const site of ["cross-site", "same-site"])
      expect(checkRequest(config, get("/api/tasks", { ...withToken, "sec-fetch-site": site }))).toMatchObject(
        {
          status: 403,
        },
      );
    expect(
      checkRequest(config, get("/api/tasks", { ...withToken, "sec-fetch-site": "same-origin" }))._tag,
    ).toBe("allow");
  });

  it("refuses a Host that is not the board's address (DNS rebinding)", () => {
    expect(
      checkRequest(config, get("/api/tasks", { ...withToken, host: "evil.example:8090" })),
    ).toMatchObject({
      status: 403,
    });
    expect(checkRequest(config, get("/api/tasks", { ...withToken, host: "evil.example" }))).toMatchObject({
      status: 403,
    });
    // Any port of a loopback name: a port-forward from another local port still works.
    expect(checkRequest(config, get("/api/tasks", { ...withToken, host: "localhost:18090" }))._tag).toBe(
      "allow",
    );
    expect(checkRequest(config, get("/api/tasks", { ...withToken, host: "[::1]:8090" }))._tag).toBe("allow");
    expect(allowedHosts("0.0.0.0")).toBeUndefined();
  });

  it("takes no input: anything but GET and HEAD is refused", () => {
    for (const method of ["POST", "PUT", "DELETE", "PATCH"])
      expect(checkRequest(config, { ...get("/api/tasks", withToken), method })).toMatchObject({
        status: 405,
      });
  });
});
