import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  loadControllerOptions,
  parseDuration,
  parseResolve,
  readControllerOptions,
} from "../../src/cli/options.ts";

describe("controller options", () => {
  it("take flags over environment over config file over defaults", async () => {
    const dir = mkdtempSync(join(tmpdir(), "opstask-options-"));
    const file = join(dir, "config.yaml");
    writeFileSync(file, "concurrency: 7\nrequeueInterval: 30s\nduplicatePolicy: queue\n");
    const options = await loadControllerOptions(["--config", file, "--concurrency", "5"], {
      OPSTASK_REQUEUE_INTERVAL: "20s",
    });
    expect(options.concurrency).toBe(5);
    expect(options.requeueInterval).toBe(20_000);
    expect(options.duplicatePolicy).toBe("queue");
    expect(options.backoffCap).toBe(20_000);
    expect(options.sources).toMatchObject({
      concurrency: "flag",
      requeueInterval: "env",
      duplicatePolicy: "config",
      logLevel: "default",
    });
  });

  it("name the option, its source and what is accepted when a value is bad", async () => {
    expect(() => readControllerOptions(["--concurrency", "0"], {})).toThrow(
      'invalid value "0" for --concurrency: expected an integer ≥ 1',
    );
    expect(() => readControllerOptions([], { OPSTASK_DUPLICATE_POLICY: "fifo" })).toThrow(
      'invalid value "fifo" for $OPSTASK_DUPLICATE_POLICY: expected reject | queue',
    );
    expect(() => readControllerOptions(["--no-such-flag"], {})).toThrow(/Unknown option '--no-such-flag'/);
    const dir = mkdtempSync(join(tmpdir(), "opstask-options-"));
    const file = join(dir, "config.yaml");
    writeFileSync(file, "concurency: 3\n");
    await expect(loadControllerOptions(["--config", file], {})).rejects.toThrow(
      /unknown option "concurency"/,
    );
  });

  it("parse durations and curl-style --resolve rules", () => {
    expect([
      parseDuration("10ms"),
      parseDuration("15s"),
      parseDuration("2m"),
      parseDuration("1h"),
      parseDuration("5"),
    ]).toEqual([10, 15_000, 120_000, 3_600_000, undefined]);
    expect(parseResolve("etcd-test-client.default:*:127.0.0.1")).toEqual({
      host: "etcd-test-client.default",
      port: "*",
      address: "127.0.0.1",
    });
    expect(parseResolve("h:8080:[::1]")).toEqual({ host: "h", port: 8080, address: "::1" });
    expect(parseResolve("nonsense")).toBeUndefined();
    expect(
      readControllerOptions(["--resolve", "a:1:127.0.0.1", "--resolve", "b:*:127.0.0.2"], {}).resolve,
    ).toHaveLength(2);
  });
});
