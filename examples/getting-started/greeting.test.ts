/**
 * The getting-started operator (docs/library.md) in simulation, as the repository runs it; the
 * tarball test (test/package/tarball.test.ts) runs the same files from the installed package.
 */
import { describe, expect, it } from "vitest";
import { simulateGreetings } from "./simulation.ts";

describe("getting-started Greeting operator", () => {
  it("greets, fails a wrong sum, rejects an unknown member, and deletes all three after the TTL", async () => {
    expect(await simulateGreetings()).toEqual({
      states: { hi: "Succeeded", "bad-sum": "Failed", unknown: "Rejected" },
      description: "Hello, Ada!",
      remaining: [],
    });
  });
});
