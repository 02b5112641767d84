/**
 * What a task author writes reaches the operator's terminal only escaped: a task whose status carries
 * ESC sequences, C1 and bidi controls (as a rejected image name echoed into lastErrors would), read
 * from a real kube-apiserver by describe, get (table and wide) and wait, prints them as `\x1b`,
 * `\u202e`…; `-o json` stays the object, exactly.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { beforeAll, describe, expect, it } from "vitest";
import { terminalText } from "../../src/api/terminal-text.ts";
import { MaxStatusTextLength } from "../../src/api/text-cap.ts";
import { renderDescription } from "../../src/cli/task/describe.ts";
import { etcdCliKind } from "../../src/cli/task/etcd-kind.ts";
import { makeOpstaskCommands } from "../../src/cli/task/index.ts";
import { viewOf } from "../../src/cli/task/task-view.ts";
import { createTestNamespace, repoRoot, useControlPlane } from "../support/cluster.ts";
import { captureTaskIo } from "../support/task-io.ts";

const crds = readdirSync(join(repoRoot, "deploy", "crds"))
  .filter((file) => file.endsWith(".yaml"))
  .map((file) => join(repoRoot, "deploy", "crds", file));
const cluster = useControlPlane({ crds });
const gvr = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcdopstasks" } as const;
const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

// Clear the screen and home the cursor; set the window title (OSC … BEL); C1 CSI; a bidi override.
const clear = "\u001b[2J\u001b[H";
const title = "\u001b]0;pwned\u0007";
const hostile = `registry.example/etcd:${clear}v1${title}\u009b31m\u202etxt.exe\u007f`;
const escaped = "registry.example/etcd:\\x1b[2J\\x1b[Hv1\\x1b]0;pwned\\x07\\x9b31m\\u202etxt.exe\\x7f";

/** Any control character a terminal acts on (the CLI's own newlines aside). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding them is what this test is for.
const control = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe("task-author text printed by the CLI", () => {
  let kubeconfig: string;
  let namespace: string;

  const run = async (command: string, args: ReadonlyArray<string>) => {
    const { io, captured } = captureTaskIo({ program: "opstask", columns: 400 });
    const code = await makeOpstaskCommands(() => io)[command]?.([
      ...args,
      "--kubeconfig",
      kubeconfig,
      "-n",
      namespace,
    ]);
    return { code, ...captured };
  };

  beforeAll(async () => {
    const kc = cluster().makeKubeConfig();
    kubeconfig = cluster().kubeconfigPath;
    // No controller watches this namespace: the status written below stays as it is.
    namespace = await createTestNamespace(kc, "cli-terminal");
    const api = kc.makeApiClient(CustomObjectsApi);
    await api.createNamespacedCustomObject({
      ...gvr,
      namespace,
      body: {
        apiVersion: "druid.gardener.cloud/v1alpha1",
        kind: "EtcdOpsTask",
        metadata: { name: "hostile", namespace },
        spec: { etcdName: "etcd-a", config: { onDemandSnapshot: { type: "full" } } },
      },
    });
    const now = new Date().toISOString().replace(/\.\d+Z$/, "Z");
    await api.patchNamespacedCustomObjectStatus(
      {
        ...gvr,
        namespace,
        name: "hostile",
        body: {
          status: {
            state: "Failed",
            lastTransitionTime: now,
            lastOperation: {
              type: "Admit",
              state: "Failed",
              description: `image ${hostile} is not allowed`,
              runID: "run-1",
              lastUpdateTime: now,
            },
            lastErrors: [
              {
                code: "ERR_IMAGE_NOT_ALLOWED",
                description: `[Operation: Admit, Code: ERR_IMAGE_NOT_ALLOWED] message: image ${hostile} is not allowed, cause: multi\nline`,
                observedAt: now,
              },
            ],
          },
        },
      },
      mergePatch,
    );
  });

  it("describe shows the escapes, not the characters", async () => {
    const result = await run("describe", ["hostile"]);
    expect(result.code).toBe(0);
    expect(result.out).toContain(`message: image ${escaped} is not allowed`);
    expect(result.out).toContain("cause:   multi\\nline");
    expect(result.out).toContain(`Phase:       Admit/Failed: image ${escaped} is not allowed`);
    expect(result.out).not.toMatch(control);
  });

  it("get's table and -o wide keep one row per task, escaped", async () => {
    const table = await run("get", []);
    expect(table.code).toBe(0);
    expect(table.out.trimEnd().split("\n")).toHaveLength(2);
    const wide = await run("get", ["-o", "wide"]);
    expect(wide.out).toContain(`image ${escaped} is not allowed`);
    expect(wide.out.trimEnd().split("\n")).toHaveLength(2);
    expect(`${table.out}${wide.out}`).not.toMatch(control);
  });

  it("wait prints the last error escaped", async () => {
    const result = await run("wait", ["hostile"]);
    expect(result.code).toBe(1);
    expect(result.err).toContain(
      `ERR_IMAGE_NOT_ALLOWED: image ${escaped} is not allowed (cause: multi\\nline)`,
    );
    expect(`${result.out}${result.err}`).not.toMatch(control);
  });

  it("-o json stays the object, exactly, with every control character as a JSON escape", async () => {
    const result = await run("get", ["hostile", "-o", "json"]);
    const object = JSON.parse(result.out) as { status: { lastOperation: { description: string } } };
    expect(object.status.lastOperation.description).toBe(`image ${hostile} is not allowed`);
    expect(result.out).toContain(
      "\\u001b[2J\\u001b[Hv1\\u001b]0;pwned\\u0007\\u009b31m\\u202etxt.exe\\u007f",
    );
    expect(result.out).not.toMatch(control);
  });
});

describe("terminalText", () => {
  it("escapes C0, DEL, C1 and bidi controls, leaves other text alone, and is idempotent", () => {
    expect(terminalText(hostile)).toBe(escaped);
    expect(terminalText("tab\there\r\n\u2066x\u2069")).toBe("tab\\there\\r\\n\\u2066x\\u2069");
    expect(terminalText("etcd-main: 3 members, ünïcode ✓")).toBe("etcd-main: 3 members, ünïcode ✓");
    expect(terminalText(terminalText(hostile))).toBe(escaped);
  });

  it("caps as the controller caps what it writes, before escaping", () => {
    const long = terminalText(`${"\u001b".repeat(2_000)}`);
    expect(long.startsWith("\\x1b")).toBe(true);
    expect(long).toMatch(/more characters\)$/);
    expect(long.length).toBeLessThanOrEqual(MaxStatusTextLength * 4);
  });

  it("describe escapes an Event's note too (Events are not part of the view)", () => {
    const view = viewOf(etcdCliKind, {
      apiVersion: "druid.gardener.cloud/v1alpha1",
      kind: "EtcdOpsTask",
      metadata: {
        name: "t",
        namespace: "ns",
        uid: "u",
        resourceVersion: "1",
        creationTimestamp: "2026-11-25T12:00:00Z",
      },
      spec: { etcdName: "etcd-a", config: { onDemandSnapshot: { type: "full" } } },
    });
    const note = `snapshot of ${hostile} failed`;
    const text = renderDescription(
      view,
      [
        {
          type: "Warning",
          reason: "Failed",
          note,
          at: Date.parse("2026-11-25T12:00:05Z"),
          count: 1,
          reportingController: "opstask",
        },
      ],
      Date.parse("2026-11-25T12:01:00Z"),
    );
    expect(text).toContain(`snapshot of ${escaped} failed`);
    expect(text).not.toMatch(control);
  });
});
