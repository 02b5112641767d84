// Every way client-node fails, folded into KubeError: reason, code, message, retryability.
import { ApiException } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import {
  fromStatus,
  isRetryable,
  KubeError,
  type KubeErrorReason,
  reasonOfCode,
  toKubeError,
} from "../../src/kube/errors.ts";

const status = (code: number, reason: string, message: string) =>
  JSON.stringify({ kind: "Status", apiVersion: "v1", status: "Failure", message, reason, code });

describe("ApiException with the Status as a JSON string (codes missing from the OpenAPI spec)", () => {
  it.each<[number, string, KubeErrorReason, boolean]>([
    [409, "Conflict", "Conflict", false],
    [404, "NotFound", "NotFound", false],
    [403, "Forbidden", "Forbidden", false],
    [422, "Invalid", "Invalid", false],
    [400, "BadRequest", "Invalid", false],
    [415, "UnsupportedMediaType", "Invalid", false],
    [410, "Expired", "Gone", false],
    [429, "TooManyRequests", "TooManyRequests", true],
    [500, "InternalError", "Transient", true],
    [503, "ServiceUnavailable", "Transient", true],
    [504, "Timeout", "Transient", true],
  ])("HTTP %i (%s) is %s, retryable: %s", (code, reason, expected, retryable) => {
    const error = toKubeError(
      new ApiException(code, "Unknown API Status Code!", status(code, reason, `the message ${code}`), {}),
    );
    expect(error).toBeInstanceOf(KubeError);
    expect(error._tag).toBe("KubeError");
    expect(error.reason).toBe(expected);
    expect(error.code).toBe(code);
    expect(error.message).toBe(`the message ${code}`);
    expect(isRetryable(error)).toBe(retryable);
  });

  it("takes the message from a parsed Status object too", () => {
    const error = toKubeError(new ApiException(409, "x", { message: "parsed", code: 409 }, {}));
    expect(error.message).toBe("parsed");
    expect(error.reason).toBe("Conflict");
  });

  it("keeps a body that is not JSON as the message", () => {
    const error = toKubeError(new ApiException(502, "x", "Bad Gateway from the proxy", {}));
    expect(error).toMatchObject({ reason: "Transient", code: 502, message: "Bad Gateway from the proxy" });
  });

  it("401 without a body (a code the spec knows) is Unauthorized", () => {
    const error = toKubeError(new ApiException(401, "Unauthorized", undefined, {}));
    expect(error).toMatchObject({ reason: "Unauthorized", code: 401, message: "Unauthorized" });
    expect(isRetryable(error)).toBe(false);
  });
});

describe("failures without an HTTP response are Transient with code 0", () => {
  it("a network error keeps undici's cause", () => {
    const error = toKubeError(
      new TypeError("fetch failed", { cause: new Error("connect ECONNREFUSED 127.0.0.1:1") }),
    );
    expect(error).toMatchObject({ reason: "Transient", code: 0 });
    expect(error.message).toContain("ECONNREFUSED");
    expect(isRetryable(error)).toBe(true);
  });

  it("an abort or timeout", () => {
    const abort = toKubeError(new DOMException("This operation was aborted", "AbortError"));
    expect(abort).toMatchObject({ reason: "Transient", code: 0 });
    expect(abort.message).toContain("AbortError");
    const timeout = toKubeError(new DOMException("The operation was aborted due to timeout", "TimeoutError"));
    expect(timeout.message).toContain("TimeoutError");
  });

  it("anything else thrown", () => {
    expect(toKubeError("a string")).toMatchObject({ reason: "Transient", code: 0, message: "a string" });
  });
});

describe("watch failures", () => {
  it("a non-200 watch response (Error with statusCode) keeps its code", () => {
    const error = Object.assign(new Error("Gone"), { statusCode: 410 });
    expect(toKubeError(error)).toMatchObject({ reason: "Gone", code: 410 });
  });

  it("an ERROR event's Status object", () => {
    const error = fromStatus({
      kind: "Status",
      code: 410,
      reason: "Expired",
      message: "too old resource version",
    });
    expect(error).toMatchObject({ reason: "Gone", code: 410, message: "too old resource version" });
    expect(fromStatus({})).toMatchObject({ reason: "Transient", code: 0 });
  });
});

describe("codes", () => {
  it("a KubeError passes through unchanged", () => {
    const error = new KubeError({ reason: "Conflict", code: 409, message: "m" });
    expect(toKubeError(error)).toBe(error);
  });

  it("other 4xx are Invalid, 408 is Transient", () => {
    expect(reasonOfCode(405)).toBe("Invalid");
    expect(reasonOfCode(408)).toBe("Transient");
  });
});
