/**
 * `opstask schedule create|get|describe|suspend|resume|trigger`: TaskSchedules from the command line,
 * for any task kind the CLI knows (`kinds`; `opstask` passes EtcdOpsTask). `create -f` checks the
 * schedule with its schema, its cron with the controller's parser and its template with the task
 * kind's own decoder before anything is sent. `trigger` creates a run now, named for this minute as
 * the schedule would name it: a scheduled run of the same minute and a second trigger get
 * AlreadyExists instead of a second run.
 *
 * Exit codes: 0 done, 1 the API refused or failed, 2 a bad argument.
 */
import { readFile } from "node:fs/promises";
import * as Effect from "effect/Effect";
import * as Result from "effect/Result";
import * as SchemaParser from "effect/SchemaParser";
import { parse, stringify } from "yaml";
import { formatDecodeError } from "../../api/decode-error.ts";
import type { KubeError } from "../../kube/errors.ts";
import { parseCron } from "../../schedule/cron-times.ts";
import { runObject } from "../../schedule/run-object.ts";
import { ScheduleSpec, scheduleResource, TaskScheduleSchema } from "../../schedule/schedule-spec.ts";
import { OptionError } from "../options.ts";
import { parseFlags, positionals, resolveTarget, stringFlag } from "../task/args.ts";
import type { CliKind } from "../task/cli-kind.ts";
import type { TaskIo } from "../task/io.ts";
import { type ScheduleApi, scheduleApi } from "./schedule-requests.ts";
import { describeSchedule, scheduleTable } from "./schedule-view.ts";

const verbs = ["create", "get", "describe", "suspend", "resume", "trigger"] as const;

const usageOf = (program: string) => `Usage: ${program} schedule <verb> [options]

Verbs:
  create -f FILE           create a TaskSchedule; its cron, time zone and task template are checked first
  get [NAME] [-o json|yaml]  schedules: cron, kind, suspend, active runs, last schedule and success, next run
  describe NAME            spec, status, skipped runs (and why) and the schedule's runs
  suspend NAME             stop creating runs (spec.suspend: true)
  resume NAME              create runs again; a missed time runs once, the most recent only
  trigger NAME             create a run now, named for this minute as the schedule names its runs

Every verb takes --kubeconfig FILE, --context NAME and -n/--namespace NS; -h, --help prints this.
`;

const decodeSpec = SchemaParser.decodeUnknownResult(ScheduleSpec, { errors: "all" });
const decodeSchedule = SchemaParser.decodeUnknownResult(TaskScheduleSchema, { errors: "all" });

const kindFor = (kinds: ReadonlyArray<CliKind>, apiVersion: unknown, kind: unknown): CliKind | undefined =>
  kinds.find(
    (candidate) =>
      `${candidate.resource.group}/${candidate.resource.version}` === apiVersion &&
      candidate.resource.kind === kind,
  );

const kindList = (kinds: ReadonlyArray<CliKind>) =>
  kinds.map((kind) => `${kind.resource.kind} (${kind.resource.group}/${kind.resource.version})`).join(", ");

/** The schedule in `file`, checked; an `OptionError` names each problem and its field. */
export const checkedSchedule = async (file: string, kinds: ReadonlyArray<CliKind>, namespace: string) => {
  let manifest: unknown;
  try {
    manifest = parse(await readFile(file, "utf8"));
  } catch (error) {
    throw new OptionError(
      `cannot read ${file} (-f): ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  const object =
    typeof manifest === "object" && manifest !== null ? (manifest as Record<string, unknown>) : {};
  const expected = `${scheduleResource.group}/${scheduleResource.version}`;
  if (object.apiVersion !== expected || object.kind !== scheduleResource.kind)
    throw new OptionError(`${file}: expected apiVersion ${expected} and kind ${scheduleResource.kind}`);
  const metadata =
    typeof object.metadata === "object" && object.metadata !== null
      ? (object.metadata as Record<string, unknown>)
      : {};
  if (typeof metadata.name !== "string")
    throw new OptionError(`${file}: metadata.name is missing: name the schedule`);
  const spec = decodeSpec(object.spec);
  if (Result.isFailure(spec))
    throw new OptionError(
      `${file}: ${formatDecodeError(spec.failure)
        .map((line) => `spec.${line}`)
        .join("; ")}`,
    );
  const cron = parseCron(spec.success.schedule, spec.success.timeZone);
  if (Result.isFailure(cron)) throw new OptionError(`${file}: ${cron.failure}`);
  const ref = spec.success.taskKind;
  const kind = kindFor(kinds, ref.apiVersion, ref.kind);
  if (kind === undefined)
    throw new OptionError(
      `${file}: spec.taskKind: ${ref.kind} (${ref.apiVersion}) is not a kind this CLI knows (${kindList(kinds)})`,
    );
  const run = runObject(
    {
      metadata: {
        name: metadata.name,
        namespace,
        uid: "",
        resourceVersion: "",
        generation: 0,
        creationTimestamp: "2026-01-01T00:00:00Z",
      },
      spec: spec.success,
    },
    Date.now(),
  );
  const errors = kind.check({ ...run, metadata: { ...run.metadata } });
  if (errors.length > 0)
    throw new OptionError(
      `${file}: its runs would be Rejected as invalid ${ref.kind}s: ${errors.map((error) => `spec.taskTemplate.${error}`).join("; ")}`,
    );
  return { ...object, metadata: { ...metadata, namespace } };
};

const apiFailure = (io: TaskIo, what: string) => (error: KubeError) =>
  Effect.sync(() => {
    io.stderr.write(`${io.program} schedule: ${what}: ${error.message}\n`);
    return 1;
  });

const runVerb = async (
  verb: (typeof verbs)[number],
  argv: ReadonlyArray<string>,
  io: TaskIo,
  kinds: ReadonlyArray<CliKind>,
): Promise<number> => {
  const hint = `${io.program} schedule --help`;
  const parsed = parseFlags(
    argv,
    verb === "create"
      ? { filename: { type: "string", short: "f" } }
      : verb === "get"
        ? { output: { type: "string", short: "o" } }
        : {},
    hint,
  );
  if (parsed.flags.help === true) {
    io.stdout.write(usageOf(io.program));
    return 0;
  }
  const target = await resolveTarget(parsed.flags, io.env, kinds);
  const namespace = target.namespace;
  const api: ScheduleApi = scheduleApi(target.client);
  const run = (effect: Effect.Effect<number, KubeError>, what: string) =>
    Effect.runPromise(effect.pipe(Effect.catch(apiFailure(io, what))));
  switch (verb) {
    case "create": {
      positionals(parsed, [], hint);
      const file = stringFlag(parsed.flags, "filename");
      if (file === undefined) throw new OptionError(`create needs -f FILE; see ${hint}`);
      const body = await checkedSchedule(file, kinds, namespace);
      return run(
        api.create(namespace, body).pipe(
          Effect.map((created) => {
            io.stdout.write(`taskschedule.${scheduleResource.group}/${created.metadata.name} created\n`);
            return 0;
          }),
        ),
        "create",
      );
    }
    case "get": {
      const output = stringFlag(parsed.flags, "output");
      if (output !== undefined && output !== "json" && output !== "yaml")
        throw new OptionError(`invalid value "${output}" for -o: expected json or yaml`);
      const names = parsed.positionals;
      return run(
        (names.length === 0
          ? api.list(namespace)
          : Effect.forEach(names, (name) => api.get(namespace, name))
        ).pipe(
          Effect.map((objects) => {
            const shown =
              names.length === 1 ? objects[0] : { apiVersion: "v1", kind: "List", items: objects };
            io.stdout.write(
              output === "json"
                ? `${JSON.stringify(shown, null, 2)}\n`
                : output === "yaml"
                  ? stringify(shown)
                  : objects.length === 0
                    ? `No schedules in ${namespace}.\n`
                    : scheduleTable(objects),
            );
            return 0;
          }),
        ),
        "get",
      );
    }
    case "describe": {
      const [name = ""] = positionals(parsed, ["schedule"], hint);
      return run(
        Effect.gen(function* () {
          const object = yield* api.get(namespace, name);
          const spec = (object.spec ?? {}) as { taskKind?: { apiVersion?: unknown; kind?: unknown } };
          const kind = kindFor(kinds, spec.taskKind?.apiVersion, spec.taskKind?.kind);
          const runs = kind === undefined ? [] : yield* api.runs(kind.resource, namespace, name);
          io.stdout.write(describeSchedule(object, runs));
          return 0;
        }),
        "describe",
      );
    }
    case "suspend":
    case "resume": {
      const [name = ""] = positionals(parsed, ["schedule"], hint);
      return run(
        api.setSuspend(namespace, name, verb === "suspend").pipe(
          Effect.map(() => {
            io.stdout.write(
              `taskschedule.${scheduleResource.group}/${name} ${verb === "suspend" ? "suspended" : "resumed"}\n`,
            );
            return 0;
          }),
        ),
        verb,
      );
    }
    case "trigger": {
      const [name = ""] = positionals(parsed, ["schedule"], hint);
      return run(
        Effect.gen(function* () {
          const object = yield* api.get(namespace, name);
          const decoded = decodeSchedule(object);
          if (Result.isFailure(decoded)) {
            io.stderr.write(
              `${io.program} schedule: trigger: ${name} is not a valid schedule: ${formatDecodeError(decoded.failure).join("; ")}\n`,
            );
            return 1;
          }
          const schedule = decoded.success;
          const kind = kindFor(kinds, schedule.spec.taskKind.apiVersion, schedule.spec.taskKind.kind);
          if (kind === undefined) {
            io.stderr.write(
              `${io.program} schedule: trigger: ${schedule.spec.taskKind.kind} is not a kind this CLI knows (${kindList(kinds)})\n`,
            );
            return 1;
          }
          const body = runObject(schedule, Math.floor(Date.now() / 60_000) * 60_000, "opstask-cli");
          return yield* api.createRun(kind.resource, namespace, body).pipe(
            Effect.map((created) => {
              io.stdout.write(
                `${kind.resource.plural}.${kind.resource.group}/${created.metadata.name} created\n`,
              );
              return 0;
            }),
            Effect.catchIf(
              (error) => error.reason === "Conflict",
              () =>
                Effect.sync(() => {
                  io.stderr.write(
                    `${io.program} schedule: trigger: ${body.metadata.name} exists already (a run of this minute, scheduled or triggered); try again next minute\n`,
                  );
                  return 1;
                }),
            ),
          );
        }),
        "trigger",
      );
    }
  }
};

/**
 * `schedule create|get|describe|suspend|resume|trigger` for TaskSchedules whose runs are of `kinds`
 * (docs/schedules.md); resolves to the exit code: 0 done, 1 the API refused or failed, 2 a bad
 * argument (each printed on `io.stderr`). An operator adds it to its CLI with
 * `taskCli(kinds, { commands: { schedule: { summary, run: scheduleCommand(kinds) } } })`.
 */
export const scheduleCommand =
  (kinds: ReadonlyArray<CliKind>) =>
  async (argv: ReadonlyArray<string>, io: TaskIo): Promise<number> => {
    const [verb, ...rest] = argv;
    if (verb === undefined || verb === "--help" || verb === "-h") {
      (verb === undefined ? io.stderr : io.stdout).write(usageOf(io.program));
      return verb === undefined ? 2 : 0;
    }
    const known = verbs.find((candidate) => candidate === verb);
    if (known === undefined) {
      io.stderr.write(`${io.program} schedule: unknown verb "${verb}"\n\n${usageOf(io.program)}`);
      return 2;
    }
    try {
      return await runVerb(known, rest, io, kinds);
    } catch (error) {
      if (error instanceof OptionError) {
        io.stderr.write(`${io.program} schedule ${known}: ${error.message}\n`);
        return 2;
      }
      throw error;
    }
  };
