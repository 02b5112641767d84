/**
 * Preloaded into a controller to see what it allocates, freed or not (where scavenges and full
 * collections come from): V8's sampling heap profiler with the objects the collector has freed kept
 * in the counts, one sample per 16 KiB allocated on average. The profile is written every 10 s to
 * `OPSTASK_ALLOC_PROFILE` (default `/tmp/opstask-alloc-<pid>.heapprofile`); the last one covers the
 * process up to at most 10 s before it ended. Read it with `node bench/profile-summary.ts FILE`.
 *
 *   scripts/bench opstask-at-rest --variant "alloc=/tmp/b/out/main.js@node=--import=$PWD/bench/alloc-sampling.ts;…"
 *
 * Best with an unminified bundle (scripts/bundle.ts with minify off), whose function names are kept.
 */
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector";

const out = process.env.OPSTASK_ALLOC_PROFILE ?? `/tmp/opstask-alloc-${process.pid}.heapprofile`;
const session = new Session();
session.connect();
session.post("HeapProfiler.enable");
session.post("HeapProfiler.startSampling", {
  samplingInterval: 16 * 1024,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true,
});
setInterval(() => {
  session.post("HeapProfiler.getSamplingProfile", (error, result) => {
    if (error === null) writeFileSync(out, JSON.stringify(result.profile));
  });
}, 10_000).unref();
