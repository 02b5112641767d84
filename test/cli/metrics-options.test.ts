import { describe, expect, it } from "vitest";
import { OptionError, readControllerOptions } from "../../src/cli/options.ts";

describe("metrics serving options", () => {
  it("is secure by default on :8443; --metrics-secure=false is druid's plain HTTP on :8080", () => {
    const secure = readControllerOptions([], {});
    expect([secure.metricsSecure, secure.metricsAddress]).toEqual([true, ":8443"]);
    const plain = readControllerOptions(["--metrics-secure=false"], {});
    expect([plain.metricsSecure, plain.metricsAddress]).toEqual([false, ":8080"]);
    const chosen = readControllerOptions(["--metrics-address=:9000"], { OPSTASK_METRICS_SECURE: "false" });
    expect([chosen.metricsSecure, chosen.metricsAddress]).toEqual([false, ":9000"]);
  });

  it("refuses half a certificate pair, a certificate for plain metrics, and HTTPS on the probe port", () => {
    expect(() => readControllerOptions(["--metrics-tls-cert-file=/tls.crt"], {})).toThrow(
      /--metrics-tls-cert-file and --metrics-tls-key-file go together/,
    );
    expect(() =>
      readControllerOptions(
        ["--metrics-secure=false", "--metrics-tls-cert-file=/tls.crt", "--metrics-tls-key-file=/tls.key"],
        {},
      ),
    ).toThrow(OptionError);
    expect(() => readControllerOptions(["--metrics-address=:8081", "--probe-address=:8081"], {})).toThrow(
      /need a port of their own/,
    );
    expect(() => readControllerOptions(["--metrics-secure=maybe"], {})).toThrow(
      /invalid value "maybe" for --metrics-secure: expected true \| false/,
    );
  });
});
