/** The handler defect limit as a controller option (issue 22 point 6). */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadControllerOptions, OptionError, readControllerOptions } from "../../src/cli/options.ts";

describe("--handler-defect-limit", () => {
  it("defaults to 5 defects of one phase", () => {
    expect(readControllerOptions([], {}).handlerDefectLimit).toBe(5);
  });

  it("comes from the flag, OPSTASK_HANDLER_DEFECT_LIMIT or the config file (handlerDefectLimit)", async () => {
    expect(readControllerOptions(["--handler-defect-limit", "2"], {}).handlerDefectLimit).toBe(2);
    expect(readControllerOptions([], { OPSTASK_HANDLER_DEFECT_LIMIT: "9" }).handlerDefectLimit).toBe(9);
    const dir = mkdtempSync(join(tmpdir(), "opstask-options-"));
    try {
      const file = join(dir, "config.yaml");
      writeFileSync(file, "handlerDefectLimit: 3\n");
      expect((await loadControllerOptions(["--config", file], {})).handlerDefectLimit).toBe(3);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses a value that is not an integer ≥ 1, naming the option and what it accepts", () => {
    expect(() => readControllerOptions(["--handler-defect-limit", "0"], {})).toThrow(OptionError);
    expect(() => readControllerOptions([], { OPSTASK_HANDLER_DEFECT_LIMIT: "many" })).toThrow(
      /OPSTASK_HANDLER_DEFECT_LIMIT.*an integer ≥ 1/,
    );
  });
});
