import type { V1JobStatus } from "@kubernetes/client-node";

/**
 * The status the Job controller writes once a Job's one pod has succeeded: no Job controller runs
 * beside the test control plane, so a test that needs a finished compaction Job writes it itself.
 */
export const succeededJobStatus = (): V1JobStatus => {
  const now = new Date(Math.floor(Date.now() / 1000) * 1000);
  const done = { status: "True", reason: "CompletionsReached", lastProbeTime: now, lastTransitionTime: now };
  return {
    startTime: new Date(now.getTime() - 60_000),
    completionTime: now,
    succeeded: 1,
    conditions: [
      { type: "SuccessCriteriaMet", ...done },
      { type: "Complete", ...done },
    ],
  };
};
