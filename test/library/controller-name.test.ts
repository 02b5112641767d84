/**
 * The default name of a library kind's controller (its field manager and Events'
 * reportingController): a qualified name the API server accepts, whatever the kind's group and plural.
 */
import { describe, expect, it } from "vitest";
import { defaultControllerName } from "../../src/library/controller-name.ts";

/** Kubernetes' qualified name: an optional DNS subdomain prefix, then a name of at most 63 characters. */
const qualifiedName = /^(?:[a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

describe("defaultControllerName", () => {
  it("is <group>/<plural>-controller", () => {
    expect(defaultControllerName({ group: "laundry.example.com", plural: "washes" })).toBe(
      "laundry.example.com/washes-controller",
    );
  });

  it("keeps the plural alone when the suffix would take the name past 63 characters", () => {
    const plural = "p".repeat(60);
    expect(defaultControllerName({ group: "example.com", plural })).toBe(`example.com/${plural}`);
  });

  it("drops the group when the whole would pass 128 characters, and for the core group", () => {
    const group = `${"g".repeat(120)}.com`;
    expect(defaultControllerName({ group, plural: "washes" })).toBe("washes-controller");
    expect(defaultControllerName({ group: "", plural: "washes" })).toBe("washes-controller");
  });

  it("is always a qualified name of at most 128 characters", () => {
    for (const group of ["", "a.io", `${"g".repeat(60)}.${"h".repeat(60)}.io`, `${"x".repeat(200)}.io`])
      for (const plural of ["s", "washes", "p".repeat(52), "p".repeat(53), "p".repeat(63)]) {
        const name = defaultControllerName({ group, plural });
        expect(name.length, name).toBeLessThanOrEqual(128);
        expect(name, name).toMatch(qualifiedName);
      }
  });
});
