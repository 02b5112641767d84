/**
 * What reading a settled task costs at a takeover, per task: `settledFacts` over 5,000 finished
 * EtcdOpsTasks of the apiserver's plain shape (the hand-written read, src/api/plain-read.ts), against
 * the Effect Schema decodes it stands in for (`decodeTtlSeconds` and the metadata-and-status struct),
 * alternated in one process. Run it jitless, as the Deployment runs: the TS loader needs wasm, which
 * `--jitless` disables, so bundle first.
 *
 *   node scripts/bundle.ts bench/settled-facts-read.ts /tmp/sfr && node --jitless --max-semi-space-size=1 /tmp/sfr/settled-facts-read.js [ROUNDS]
 */
import * as Result from "effect/Result";
import * as Schema from "effect/Schema";
import * as SchemaParser from "effect/SchemaParser";
import { ObjectMeta } from "../src/api/meta.ts";
import { TaskStatusSchema } from "../src/api/status-schema.ts";
import { decodeTtlSeconds, etcdOpsTaskKind } from "../src/etcd/api/etcdopstask-kind.ts";
import { settledFacts } from "../src/reconcile/settled-facts.ts";

const tasks = 5_000;
const rounds = Number(process.argv[2] ?? 3);

/** A finished task as the controller's cache holds it after a LIST. */
const settledTask = (i: number) => ({
  apiVersion: "druid.gardener.cloud/v1alpha1",
  kind: "EtcdOpsTask",
  metadata: {
    name: `t-${i}`,
    namespace: "bench",
    uid: `6f1c2a3e-0000-4000-8000-${String(i).padStart(12, "0")}`,
    resourceVersion: String(1000 + i),
    generation: 1,
    creationTimestamp: "2026-11-26T10:00:00Z",
    finalizers: ["druid.gardener.cloud/etcdopstask"],
  },
  spec: {
    etcdName: `e-${i}`,
    ttlSecondsAfterFinished: 3600,
    config: { onDemandSnapshot: { type: "full", isFinal: false, timeoutSecondsFull: 900 } },
  },
  status: {
    state: "Succeeded",
    lastTransitionTime: "2026-11-26T10:00:02Z",
    startedAt: "2026-11-26T10:00:01Z",
    lastOperation: {
      type: "Execution",
      state: "Completed",
      description: "Full snapshot taken",
      runID: "abc",
      lastUpdateTime: "2026-11-26T10:00:02Z",
    },
  },
});

const decodeMetadataAndStatus = SchemaParser.decodeUnknownResult(
  Schema.Struct({ metadata: ObjectMeta, status: Schema.optionalKey(TaskStatusSchema) }),
);
const schemaRead = (object: unknown): boolean =>
  decodeTtlSeconds(object) !== undefined && Result.isSuccess(decodeMetadataAndStatus(object));

const objects = Array.from({ length: tasks }, (_, i) => settledTask(i));
/** µs per task of `read` over every object; throws unless every one is read. */
const perTask = (read: (object: unknown) => boolean): number => {
  const start = performance.now();
  let answered = 0;
  for (const object of objects) if (read(object)) answered++;
  const elapsed = performance.now() - start;
  if (answered !== tasks) throw new Error(`read ${answered} of ${tasks} tasks`);
  return (elapsed * 1000) / tasks;
};

for (let round = 1; round <= rounds; round++) {
  const plain = perTask((object) => settledFacts(etcdOpsTaskKind, object) !== undefined);
  const schema = perTask(schemaRead);
  console.log(
    `round ${round}: settledFacts ${plain.toFixed(1)} µs a task; the schema decodes it replaces ${schema.toFixed(1)} µs`,
  );
}
