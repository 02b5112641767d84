/**
 * OPSTASK_V8_FLAGS: the V8 flags NODE_OPTIONS refuses (deploy/deployment.yaml sets
 * --optimize-for-size), applied by `opstask controller` before its code loads; a malformed value is an
 * error that names the variable.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startupV8Flags } from "../../src/cli/deploy/node-settings.ts";
import { parseV8Flags } from "../../src/cli/v8-flags.ts";
import { repoRoot } from "../support/cluster.ts";
import { deployedEnv, deployedNodeFlags } from "../support/deployed-env.ts";

const node = (args: string[], env: Record<string, string>) =>
  spawnSync(process.execPath, args, {
    encoding: "utf8",
    timeout: 30_000,
    cwd: repoRoot,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env },
  });

describe("OPSTASK_V8_FLAGS", () => {
  it("takes flags and refuses anything else, naming the variable", () => {
    expect(parseV8Flags(" --optimize-for-size  --stack-size=900 ")).toEqual({
      ok: true,
      flags: ["--optimize-for-size", "--stack-size=900"],
    });
    for (const bad of ["optimize-for-size", "--optimize-for-size;x", "-x", "--"]) {
      const parsed = parseV8Flags(bad);
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) expect(parsed.error).toContain("OPSTASK_V8_FLAGS");
    }
  });

  it("is applied to V8 (a flag that changes what compiles: natives syntax)", () => {
    const script = `
      const { applyV8Flags } = await import("./src/cli/v8-flags.ts");
      const compiles = () => { try { new Function("%CollectGarbage(null)"); return true; } catch { return false; } };
      const before = compiles();
      applyV8Flags(process.env);
      console.log(JSON.stringify({ before, after: compiles() }));`;
    const result = node(["--input-type=module", "-e", script], {
      OPSTASK_V8_FLAGS: "--allow-natives-syntax",
    });
    expect(result.stderr).toBe("");
    expect(JSON.parse(result.stdout)).toEqual({ before: false, after: true });
  });

  it("stops `opstask controller` with exit 2 and the fix when malformed", () => {
    const result = node([join(repoRoot, "src/cli/main.ts"), "controller", "--help"], {
      OPSTASK_V8_FLAGS: "optimize-for-size",
    });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('OPSTASK_V8_FLAGS: "optimize-for-size" is not a V8 flag');
  });

  it("is set in the Deployment, and `opstask controller` starts with it", () => {
    const env = deployedEnv();
    expect(env.OPSTASK_V8_FLAGS).toBe("--optimize-for-size");
    const result = node([join(repoRoot, "src/cli/main.ts"), "controller", "--help"], {
      OPSTASK_V8_FLAGS: env.OPSTASK_V8_FLAGS ?? "",
    });
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
  });
});

describe("node flags V8 reads only at start", () => {
  it("are on the image's ENTRYPOINT, as a kind's generated image has them", () => {
    expect(deployedNodeFlags()).toEqual([...startupV8Flags]);
  });
});
