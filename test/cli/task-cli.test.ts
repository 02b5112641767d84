/**
 * The task CLI (`opstask snapshot|maintain|get|describe|wait`, also `kubectl opstask …`) against a real
 * kube-apiserver with opstask's CRDs, and the real controller running scripted handlers in this
 * process. The commands run in-process with captured output; nothing is spawned.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { CustomObjectsApi, type KubeConfig, PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { etcdCliKind } from "../../src/cli/task/etcd-kind.ts";
import { why } from "../../src/cli/task/explain.ts";
import { humanDuration } from "../../src/cli/task/human-duration.ts";
import { makeOpstaskCommands } from "../../src/cli/task/index.ts";
import { decodeLastError, type TaskView } from "../../src/cli/task/task-view.ts";
import { createTestNamespace, repoRoot, useControlPlane } from "../support/cluster.ts";
import { type RunningController, scriptedHandlers, startController } from "../support/controller.ts";
import { captureTaskIo } from "../support/task-io.ts";
import { waitFor } from "../support/wait.ts";

const opstaskCrds = readdirSync(join(repoRoot, "deploy", "crds"))
  .filter((file) => file.endsWith(".yaml"))
  .map((file) => join(repoRoot, "deploy", "crds", file));

const cluster = useControlPlane({ crds: opstaskCrds });
const gvr = { group: "druid.gardener.cloud", version: "v1alpha1", plural: "etcdopstasks" } as const;
const mergePatch = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);

interface Run {
  readonly code: number | undefined;
  readonly out: string;
  readonly err: string;
}

const captureIo = (options: { tty?: boolean; signal?: AbortSignal } = {}) => {
  const { io, captured } = captureTaskIo({ ...options, program: "kubectl opstask", columns: 160 });
  return { captured, commands: makeOpstaskCommands(() => io) };
};

/** Runs one command in-process; `OPSTASK_CLI_ECHO=1` echoes what it printed (for docs). */
const run = async (
  command: string,
  args: ReadonlyArray<string>,
  options: { tty?: boolean; signal?: AbortSignal } = {},
): Promise<Run> => {
  const { captured, commands } = captureIo(options);
  const code = await commands[command]?.(args);
  if (process.env.OPSTASK_CLI_ECHO === "1")
    process.stdout.write(
      `\n$ kubectl opstask ${command} ${args.filter((a) => !a.includes("/")).join(" ")}  → exit ${code}\n${captured.out}${captured.err}`,
    );
  return { code, ...captured };
};

const retryError = {
  code: "ERR_EXECUTE_HTTP_REQUEST",
  message: "failed to execute HTTP request",
  cause: "dial tcp 10.0.0.1:8080: connect: connection refused",
};

describe("task CLI usage errors (exit 2, naming the option)", () => {
  it("refuses --final with a delta snapshot", async () => {
    const result = await run("snapshot", ["etcd-a", "--type", "delta", "--final"]);
    expect(result.code).toBe(2);
    expect(result.err).toContain("--final");
    expect(result.out).toBe("");
  });

  it("names the option and what is accepted for other bad input", async () => {
    const cases: ReadonlyArray<[string, ReadonlyArray<string>, string]> = [
      ["snapshot", ["etcd-a"], "missing --type: expected full | delta"],
      ["snapshot", ["etcd-a", "--type", "weekly"], 'invalid value "weekly" for --type'],
      [
        "snapshot",
        ["etcd-a", "--type", "full", "--timeout", "60"],
        "--timeout: expected whole seconds ≥ 120",
      ],
      ["snapshot", ["--type", "full"], "missing <etcd>"],
      ["snapshot", ["etcd-a", "--type", "full", "--bogus"], "Unknown option '--bogus'"],
      [
        "snapshot",
        ["etcd-a", "--type", "full", "--wait-timeout", "5m"],
        "--wait-timeout applies only with --wait",
      ],
      ["maintain", ["etcd-a"], "expected --compact, --defrag, or both"],
      ["maintain", ["etcd-a", "--defrag", "--physical"], "--physical applies only with --compact"],
      ["get", ["-A", "-n", "x"], "-A/--all-namespaces and -n/--namespace exclude each other"],
      ["describe", [], "missing <task>"],
    ];
    for (const [command, args, message] of cases) {
      const result = await run(command, args);
      expect({ args, code: result.code }).toEqual({ args, code: 2 });
      expect(result.err).toContain(message);
    }
  });

  it("prints usage with the kubectl plugin's name on --help", async () => {
    const result = await run("snapshot", ["--help"]);
    expect(result.code).toBe(0);
    expect(result.out).toContain("Usage: kubectl opstask snapshot <etcd> --type full|delta");
  });
});

describe("why-line and formatting (pure)", () => {
  const base: TaskView = {
    kind: etcdCliKind,
    namespace: "ns",
    name: "t",
    uid: "u",
    resourceVersion: "1",
    createdAt: Date.parse("2026-01-01T10:00:00Z"),
    deletingSince: undefined,
    finalizers: ["druid.gardener.cloud/etcd-ops-task"],
    group: "etcd-a",
    member: "onDemandSnapshot",
    ttlSeconds: 3600,
    summary: undefined,
    invalid: [],
    status: {},
  };
  const now = Date.parse("2026-01-01T10:00:30Z");

  it("formats ages like kubectl and takes lastErrors entries apart", () => {
    expect([5_000, 150_000, 3_600_000 * 5 + 60_000, 86_400_000 * 3].map(humanDuration)).toEqual([
      "5s",
      "2m30s",
      "5h1m",
      "3d",
    ]);
    expect(
      decodeLastError({
        code: "ERR_X",
        description: "[Operation: Execution, Code: ERR_X] message: boom, cause: a, b, cause: c",
        observedAt: "2026-01-01T10:00:00Z",
      }),
    ).toMatchObject({ code: "ERR_X", operation: "Execution", message: "boom", cause: "a, b, cause: c" });
  });

  it("says what the task waits for", () => {
    expect(
      why(
        {
          ...base,
          status: {
            state: "Pending",
            lastOperation: {
              type: "Admit",
              state: "InProgress",
              description: "Waiting for EtcdOpsTask first-one on the same etcd to finish",
              runID: "r",
              lastUpdateTime: "2026-01-01T10:00:01Z",
            },
          },
        },
        now,
      ),
    ).toBe("Waiting: queued behind task first-one (same etcd)");
    expect(
      why(
        {
          ...base,
          status: {
            state: "InProgress",
            startedAt: "2026-01-01T10:00:00Z",
            lastOperation: {
              type: "Execution",
              state: "InProgress",
              description: "Snapshot request failed; retrying",
              runID: "r",
              lastUpdateTime: "2026-01-01T10:00:05Z",
            },
            lastErrors: [
              {
                code: "ERR_EXECUTE_HTTP_REQUEST",
                description: `[Operation: Execution, Code: ERR_EXECUTE_HTTP_REQUEST] message: ${retryError.message}, cause: ${retryError.cause}`,
                observedAt: "2026-01-01T10:00:05Z",
              },
            ],
          },
        },
        now,
      ),
    ).toMatch(/^Retrying: ERR_EXECUTE_HTTP_REQUEST, next attempt after backoff \(1 failed attempt/);
    expect(why({ ...base, finalizers: [] }, now)).toBe(
      "Not picked up: no controller has claimed it yet (is the EtcdOpsTask controller running and watching namespace ns?)",
    );
    // An operator's own kind: its controller, not opstask's.
    const probes = { ...etcdCliKind, resource: { ...etcdCliKind.resource, kind: "Probe" } };
    expect(why({ ...base, kind: probes, finalizers: [] }, now)).toMatch(
      /^Not picked up: .*\(is the Probe controller running and watching namespace ns\?\)$/,
    );
    expect(
      why(
        { ...base, deletingSince: now, finalizers: ["example.com/keep"], status: { state: "Succeeded" } },
        now,
      ),
    ).toBe("Deleting: waiting for finalizer example.com/keep");
  });
});

describe("task CLI against a real API server and controller", () => {
  let kc: KubeConfig;
  let api: CustomObjectsApi;
  let namespace: string;
  let queueNamespace: string;
  let kubeconfig: string;
  const controllers: RunningController[] = [];
  const handlers = scriptedHandlers();
  const snapshotHandler = handlers.registry.onDemandSnapshot;
  if (snapshotHandler === undefined) throw new Error("scriptedHandlers() registers onDemandSnapshot");
  // Maintenance tasks run the same scripts (keyed by task name).
  const registry = { ...handlers.registry, onDemandMaintenance: snapshotHandler };
  const at = (ns = namespace) => ["--kubeconfig", kubeconfig, "-n", ns];

  const read = async (name: string, ns = namespace) => {
    try {
      return (await api.getNamespacedCustomObject({ ...gvr, namespace: ns, name })) as {
        metadata: { finalizers?: string[] };
        status?: { state?: string };
      };
    } catch {
      return undefined;
    }
  };
  const stateOf = (name: string, state: string, ns = namespace) =>
    waitFor(`${name} to be ${state}`, async () =>
      (await read(name, ns))?.status?.state === state ? true : undefined,
    );

  beforeAll(async () => {
    kc = cluster().makeKubeConfig();
    kubeconfig = cluster().kubeconfigPath;
    api = kc.makeApiClient(CustomObjectsApi);
    namespace = await createTestNamespace(kc, "cli");
    queueNamespace = await createTestNamespace(kc, "cli-queue");
    // A backoff of a second leaves a retry visible long enough for a watcher to see it.
    controllers.push(await startController(kc, registry, { backoffBaseMs: 1_000 }, namespace));
    controllers.push(await startController(kc, registry, { duplicatePolicy: "queue" }, queueNamespace));
  });
  afterAll(async () => {
    for (const controller of controllers) await controller.stop();
  });

  it("snapshot --wait prints the name, a line per change, and exits 0 when the task succeeds", async () => {
    handlers.scripts.set("snap-ok", {
      execute: [
        { outcome: { kind: "retry", description: "Snapshot request failed; retrying", error: retryError } },
      ],
    });
    const result = await run("snapshot", [
      "etcd-ok",
      "--type",
      "full",
      "--name",
      "snap-ok",
      "--wait",
      ...at(),
    ]);
    expect(result.err).toBe("");
    expect(result.code).toBe(0);
    const lines = result.out.trimEnd().split("\n");
    expect(lines[0]).toBe("snap-ok");
    expect(result.out).toMatch(
      /\d+s {2}snap-ok {2}InProgress {2}Execution\/InProgress {2}last error: ERR_EXECUTE_HTTP_REQUEST {2}Snapshot request failed; retrying/,
    );
    expect(lines.at(-1)).toMatch(/^snap-ok Succeeded after \d+s: Snapshot created successfully$/);
  });

  it("snapshot --wait on a terminal redraws one progress line", async () => {
    handlers.scripts.set("snap-tty", {
      execute: [
        { outcome: { kind: "retry", description: "Snapshot request failed; retrying", error: retryError } },
      ],
    });
    const result = await run(
      "snapshot",
      ["etcd-tty", "--type", "delta", "--name", "snap-tty", "--wait", ...at()],
      { tty: true },
    );
    expect(result.code).toBe(0);
    expect(result.out).toContain("\r\x1b[2K");
    const redraws = result.out.split("\r\x1b[2K").slice(1);
    expect(redraws.some((line) => /^\d+s {2}snap-tty {2}Succeeded {2}Execution\/Completed/.test(line))).toBe(
      true,
    );
    expect(result.out).toMatch(/\nsnap-tty Succeeded after \d+s: Snapshot created successfully\n$/);
  });

  it("snapshot --wait exits 1 with the last error on stderr when the task fails", async () => {
    handlers.scripts.set("snap-fails", {
      execute: [
        {
          outcome: {
            kind: "failed",
            description: "Failed to create snapshot",
            error: {
              code: "ERR_CREATE_SNAPSHOT",
              message: "failed to create snapshot",
              cause: "failed to create snapshot, status code: 500",
            },
          },
        },
      ],
    });
    const result = await run("snapshot", [
      "etcd-fails",
      "--type",
      "full",
      "--name",
      "snap-fails",
      "--wait",
      ...at(),
    ]);
    expect(result.code).toBe(1);
    expect(result.err).toContain("error: snap-fails Failed after");
    expect(result.err).toContain(
      "ERR_CREATE_SNAPSHOT: failed to create snapshot (cause: failed to create snapshot, status code: 500)",
    );
    expect(result.err).toContain(`see: kubectl opstask describe snap-fails -n ${namespace}`);
  });

  it("maintain --wait creates an onDemandMaintenance task and follows it", async () => {
    const result = await run("maintain", [
      "etcd-m",
      "--compact",
      "--physical",
      "--defrag",
      "--wait",
      ...at(),
    ]);
    expect(result.code).toBe(0);
    const name = result.out.split("\n")[0] ?? "";
    expect(name).toMatch(/^etcd-m-maintenance-[a-z0-9]{5}$/);
    const described = await run("describe", [name, ...at()]);
    expect(described.out).toContain(
      "onDemandMaintenance: compaction (physical) + defragmentation, timeout 300s per call",
    );
  });

  it("a rejected duplicate: --wait exits 1 with ERR_DUPLICATE_TASK, describe explains it, get lists it", async () => {
    handlers.scripts.set("dup-first", { execute: [{ hang: true }] });
    const first = await run("snapshot", ["etcd-dup", "--type", "full", "--name", "dup-first", ...at()]);
    expect(first).toMatchObject({ code: 0, out: "dup-first\n" });
    await stateOf("dup-first", "InProgress");

    const second = await run("snapshot", [
      "etcd-dup",
      "--type",
      "full",
      "--name",
      "dup-second",
      "--wait",
      ...at(),
    ]);
    expect(second.code).toBe(1);
    expect(second.err).toContain("error: dup-second Rejected after");
    expect(second.err).toContain("ERR_DUPLICATE_TASK: duplicate task found");

    // The Rejected event follows the status write; give the recorder a moment.
    const described = await waitFor("the Rejected event", async () => {
      const result = await run("describe", ["dup-second", ...at()]);
      return result.out.includes("Warning Rejected") ? result : undefined;
    });
    expect(described.code).toBe(0);
    expect(described.out).toContain("State:       Rejected since");
    expect(described.out).toContain(
      "Phase:       Admit/Failed: EtcdOpsTask for the same etcd is already in progress",
    );
    expect(described.out).toContain(
      `Why:         Rejected: ERR_DUPLICATE_TASK: duplicate task found (cause: an EtcdOpsTask for etcd ${namespace}/etcd-dup is already present (task: dup-first)); deleted in`,
    );
    expect(described.out).toMatch(/\n {2}\S+Z {2}\+\d+s +metadata {2}created\n/);
    expect(described.out).toMatch(/status {4}state → Rejected \(lastTransitionTime\)/);
    expect(described.out).toMatch(
      /event {5}Warning Rejected: EtcdOpsTask for the same etcd is already in progress/,
    );
    expect(described.out).toContain("Last errors (oldest first, newest last):");
    expect(described.out).toMatch(
      /ERR_DUPLICATE_TASK {2}\(Admit\)\n {4}message: duplicate task found\n {4}cause: {3}an EtcdOpsTask/,
    );

    const listed = await run("get", at());
    expect(listed.code).toBe(0);
    const lines = listed.out.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^NAME +STATE +ETCD +PHASE +AGE +LAST ERROR$/);
    const row = (name: string) => (lines.find((line) => line.startsWith(`${name} `)) ?? "").split(/ {2,}/);
    expect(row("dup-first")).toEqual([
      "dup-first",
      "InProgress",
      "etcd-dup",
      "Execution/InProgress",
      expect.stringMatching(/^\d+s$/),
      "<none>",
    ]);
    expect(row("dup-second")).toEqual([
      "dup-second",
      "Rejected",
      "etcd-dup",
      "Admit/Failed",
      expect.stringMatching(/^\d+s$/),
      "ERR_DUPLICATE_TASK",
    ]);
    expect(row("snap-fails")).toEqual([
      "snap-fails",
      "Failed",
      "etcd-fails",
      "Execution/Failed",
      expect.stringMatching(/^\d+s$/),
      "ERR_CREATE_SNAPSHOT",
    ]);
    // Header and cells line up.
    const stateColumn = lines[0]?.indexOf("STATE");
    expect(
      lines.every((line) => line.length > (stateColumn ?? 0) && line[(stateColumn ?? 1) - 1] === " "),
    ).toBe(true);

    const all = await run("get", ["--kubeconfig", kubeconfig, "-A"]);
    expect(all.out.split("\n")[0]).toMatch(/^NAMESPACE +NAME +STATE +ETCD +PHASE +AGE +LAST ERROR$/);
    expect(all.out).toMatch(new RegExp(`${namespace} +dup-second +Rejected`));

    const timedOut = await run("wait", ["dup-first", "--wait-timeout", "1s", ...at()]);
    expect(timedOut.code).toBe(3);
    expect(timedOut.err).toContain("error: timed out after 1s waiting for dup-first, which keeps going");
    expect(timedOut.err).toContain("why: Running: Task Execution phase is in progress");

    const stop = new AbortController();
    const interrupted = run("wait", ["dup-first", ...at()], { signal: stop.signal });
    setTimeout(() => stop.abort(), 500);
    const ended = await interrupted;
    expect(ended.code).toBe(130);
    expect(ended.err).toMatch(
      /^interrupted after \d+s: dup-first is InProgress and keeps going; kubectl opstask describe dup-first/,
    );
    await api.deleteNamespacedCustomObject({ ...gvr, namespace, name: "dup-first" });
  });

  it("get -w prints the table, then a row per change, until interrupted", async () => {
    const stop = new AbortController();
    const { captured, commands } = captureIo({ signal: stop.signal });
    const watching = commands.get?.(["-w", ...at()]);
    await waitFor("the table", async () => (captured.out.includes("NAME") ? true : undefined));
    const created = await run("snapshot", ["etcd-watch", "--type", "delta", "--name", "watched", ...at()]);
    expect(created.code).toBe(0);
    await waitFor("the Succeeded row", async () =>
      /\nwatched +Succeeded +etcd-watch +Execution\/Completed/.test(captured.out) ? true : undefined,
    );
    stop.abort();
    expect(await watching).toBe(0);
    expect(captured.err).toBe("");
  });

  it("describe says which finalizer holds a deleted task", async () => {
    const created = await run("snapshot", [
      "etcd-keep",
      "--type",
      "full",
      "--name",
      "kept",
      "--wait",
      ...at(),
    ]);
    expect(created.code).toBe(0);
    const task = await read("kept");
    await api.patchNamespacedCustomObject(
      {
        ...gvr,
        namespace,
        name: "kept",
        body: { metadata: { finalizers: [...(task?.metadata.finalizers ?? []), "example.com/keep"] } },
      },
      mergePatch,
    );
    await api.deleteNamespacedCustomObject({ ...gvr, namespace, name: "kept" });
    await waitFor("the controller to release the task", async () => {
      const now = await read("kept");
      return now?.metadata.finalizers?.length === 1 ? true : undefined;
    });
    const described = await run("describe", ["kept", ...at()]);
    expect(described.out).toContain("Why:         Deleting: waiting for finalizer example.com/keep");
    expect(described.out).toContain("deletion requested (deletionTimestamp)");
    const listed = await run("get", at());
    expect(listed.out).toMatch(/\nkept +Deleting +etcd-keep/);
    await api.patchNamespacedCustomObject(
      { ...gvr, namespace, name: "kept", body: { metadata: { finalizers: null } } },
      mergePatch,
    );
  });

  it("describe says what a queued task waits for, and why a running one retries", async () => {
    handlers.scripts.set("q-first", { execute: [{ hang: true }] });
    expect(
      (await run("snapshot", ["etcd-q", "--type", "full", "--name", "q-first", ...at(queueNamespace)])).code,
    ).toBe(0);
    await stateOf("q-first", "InProgress", queueNamespace);
    expect(
      (await run("snapshot", ["etcd-q", "--type", "full", "--name", "q-second", ...at(queueNamespace)])).code,
    ).toBe(0);
    const queued = await waitFor("q-second to queue", async () => {
      const result = await run("describe", ["q-second", ...at(queueNamespace)]);
      return result.out.includes("Why:         Waiting") ? result : undefined;
    });
    expect(queued.out).toContain("Why:         Waiting: queued behind task q-first (same etcd)");

    handlers.scripts.set("retries", {
      execute: Array.from({ length: 30 }, () => ({
        outcome: {
          kind: "retry" as const,
          description: "Snapshot request failed; retrying",
          error: retryError,
        },
      })),
    });
    expect((await run("snapshot", ["etcd-r", "--type", "full", "--name", "retries", ...at()])).code).toBe(0);
    const retrying = await waitFor("retries to retry", async () => {
      const result = await run("describe", ["retries", ...at()]);
      return result.out.includes("Why:         Retrying") ? result : undefined;
    });
    expect(retrying.out).toMatch(
      /Why: {9}Retrying: ERR_EXECUTE_HTTP_REQUEST, next attempt after backoff \(\d+ failed attempts? in Execution phase: failed to execute HTTP request\)/,
    );
    await api.deleteNamespacedCustomObject({ ...gvr, namespace: queueNamespace, name: "q-first" });
    await api.deleteNamespacedCustomObject({ ...gvr, namespace, name: "retries" });
  });

  it("describe and wait of a missing task exit 1 naming it", async () => {
    const result = await run("describe", ["no-such-task", ...at()]);
    expect(result.code).toBe(1);
    expect(result.err).toContain("NotFound (404)");
    expect(result.err).toContain("no-such-task");
  });

  it("cancel aborts a running task, which ends Failed ERR_CANCELLED naming the API server's user; a second cancel says so", async () => {
    handlers.scripts.set("cancel-me", { execute: [{ hang: true }] });
    const created = await run("snapshot", ["etcd-cancel", "--type", "full", "--name", "cancel-me", ...at()]);
    expect(created.code).toBe(0);
    await stateOf("cancel-me", "InProgress");
    const call = await waitFor("the hanging Execute call", async () =>
      handlers.calls.find((each) => each.task === "cancel-me" && each.phase === "execute" && each.release),
    );
    const cancelled = await run("cancel", ["cancel-me", ...at()]);
    expect(cancelled.err).toBe("");
    expect(cancelled.code).toBe(0);
    expect(cancelled.out).toMatch(/^etcdopstask\.druid\.gardener\.cloud "cancel-me" cancelled \(by .+\)\n$/);
    call.release?.({ kind: "retry", description: "Snapshot aborted", afterMs: 60_000 });
    await stateOf("cancel-me", "Failed");
    const task = (await api.getNamespacedCustomObject({ ...gvr, namespace, name: "cancel-me" })) as {
      status: { lastErrors: Array<{ code: string; description: string }> };
    };
    expect(task.status.lastErrors.at(-1)?.code).toBe("ERR_CANCELLED");
    const again = await run("cancel", ["cancel-me", ...at()]);
    expect(again.out).toContain('"cancel-me" already cancelled by');
    expect(
      handlers.calls.filter((each) => each.task === "cancel-me" && each.phase === "execute"),
    ).toHaveLength(1);
  });

  it("cancel of a finished task leaves its outcome and says so", async () => {
    const created = await run("snapshot", [
      "etcd-done",
      "--type",
      "full",
      "--name",
      "done-first",
      "--wait",
      ...at(),
    ]);
    expect(created.code).toBe(0);
    const cancelled = await run("cancel", ["done-first", ...at()]);
    expect(cancelled.out).toContain(
      '"done-first" already Succeeded: the cancel has no effect, the outcome stays',
    );
    expect((await read("done-first"))?.status?.state).toBe("Succeeded");
  });
});
