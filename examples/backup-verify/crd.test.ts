/**
 * crd.yaml is generated from the kind's schema (crd.ts); the checked-in file must be what the
 * generator prints now, so the CRD a user applies matches the controller that decodes it.
 */
import { readFileSync } from "node:fs";
import { crdYaml } from "opstask/crd";
import { describe, expect, it } from "vitest";
import { backupVerificationCrd } from "./crd.ts";

const regenerate = "opstask crd --module examples/backup-verify/crd.ts --export backupVerificationCrd";

describe("examples/backup-verify/crd.yaml", () => {
  it("is the generator's current output (regenerate with the command in crd.ts)", () => {
    if (!backupVerificationCrd.ok) expect.fail(backupVerificationCrd.errors.join("\n"));
    const checkedIn = readFileSync(new URL("./crd.yaml", import.meta.url), "utf8");
    expect(checkedIn).toBe(crdYaml(backupVerificationCrd.crd, regenerate));
  });
});
