/**
 * crd.yaml is generated from the kind's schema (crd.ts); the checked-in file must be what the
 * generator prints now, so the CRD a user applies matches the controller that decodes it.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { crdOfExport, crdYaml } from "../../src/cli/crd-command.ts";
import { backupVerificationCrd } from "./crd.ts";

const regenerate = "opstask crd --module examples/backup-verify/crd.ts --export backupVerificationCrd";

describe("examples/backup-verify/crd.yaml", () => {
  it("is the generator's current output (regenerate with the command in crd.ts)", () => {
    const found = crdOfExport(backupVerificationCrd, "backupVerificationCrd");
    if ("error" in found) expect.fail(found.error);
    const checkedIn = readFileSync(new URL("./crd.yaml", import.meta.url), "utf8");
    expect(checkedIn).toBe(crdYaml(found.crd, regenerate));
  });
});
