// A status patch has no resourceVersion precondition, so its result may carry someone else's change;
// only then must the next change event run a pass although it shows the version our write returned.
import { describe, expect, it } from "vitest";
import { carriesForeignChange } from "../../src/reconcile/foreign-change.ts";

const object = (changes: {
  labels?: object;
  finalizers?: string[];
  rv: string;
  state?: string;
  managed?: boolean;
}) => ({
  metadata: {
    name: "t",
    resourceVersion: changes.rv,
    finalizers: changes.finalizers ?? ["ours"],
    ...(changes.labels === undefined ? {} : { labels: changes.labels }),
    ...(changes.managed === true ? { managedFields: [{ manager: "x" }] } : {}),
  },
  spec: { etcdName: "e" },
  status: { state: changes.state ?? "Pending" },
});

describe("a write's result and someone else's change", () => {
  it("sees none when only the status and the bookkeeping fields changed", () => {
    expect(
      carriesForeignChange(
        object({ rv: "1" }),
        object({ rv: "2", state: "InProgress", managed: true }),
        false,
      ),
    ).toBe(false);
  });

  it("sees a label or a finalizer someone else added meanwhile", () => {
    expect(carriesForeignChange(object({ rv: "1" }), object({ rv: "3", labels: { a: "b" } }), false)).toBe(
      true,
    );
    expect(
      carriesForeignChange(object({ rv: "1" }), object({ rv: "3", finalizers: ["ours", "theirs"] }), false),
    ).toBe(true);
  });

  it("trusts a finalizer patch (its resourceVersion precondition keeps others' changes out)", () => {
    expect(carriesForeignChange(object({ rv: "1" }), object({ rv: "2", finalizers: [] }), true)).toBe(false);
  });
});
