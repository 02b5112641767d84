/** The bound on one task as cached (--max-task-bytes), as a controller option. */
import { describe, expect, it } from "vitest";
import { OptionError, readControllerOptions } from "../../src/cli/options.ts";
import { DefaultMaxTaskBytes } from "../../src/reconcile/oversized-task.ts";

describe("--max-task-bytes", () => {
  it("defaults to 64 KiB", () => {
    expect(readControllerOptions([], {}).maxTaskBytes).toBe(DefaultMaxTaskBytes);
    expect(DefaultMaxTaskBytes).toBe(65_536);
  });

  it("takes bytes, Ki or Mi, from the flag or the environment", () => {
    expect(readControllerOptions(["--max-task-bytes", "131072"], {}).maxTaskBytes).toBe(131_072);
    expect(readControllerOptions(["--max-task-bytes", "256Ki"], {}).maxTaskBytes).toBe(262_144);
    expect(readControllerOptions([], { OPSTASK_MAX_TASK_BYTES: "1Mi" }).maxTaskBytes).toBe(1_048_576);
  });

  it("refuses a size below 4Ki or not a size, naming the option and what it accepts", () => {
    for (const bad of ["1Ki", "4095", "64K", "64KB", "-1", "lots", "1.5Mi"])
      expect(() => readControllerOptions([`--max-task-bytes=${bad}`], {})).toThrow(
        new OptionError(
          `invalid value "${bad}" for --max-task-bytes: expected a size of at least 4Ki, in bytes or with Ki or Mi, such as 64Ki`,
        ),
      );
  });
});
