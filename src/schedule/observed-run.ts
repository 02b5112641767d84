/**
 * A run of a schedule as the decider sees it: its name, the scheduled time it stands for, whether it
 * has finished, and whether it is being deleted. Read from the run object by `observeRun`.
 */
import type { TaskStatus } from "../api/status.ts";
import { scheduledTimeAnnotation } from "./run-names.ts";

export type RunPhase = "Active" | "Succeeded" | "Failed";

export interface ObservedRun {
  readonly name: string;
  readonly scheduledTime: number;
  readonly phase: RunPhase;
  /** When it finished (its status' lastTransitionTime), for lastSuccessfulTime and lastFailedTime. */
  readonly finishedAt?: number;
  /** Deleted, its cleanup not done yet: still occupies its place (Forbid, Replace). */
  readonly deleting: boolean;
}

const phaseOf = (status: TaskStatus | undefined): RunPhase => {
  switch (status?.state) {
    case "Succeeded":
      return "Succeeded";
    case "Failed":
    case "Rejected":
      return "Failed";
    default:
      return "Active";
  }
};

/**
 * The run, or undefined when it carries no readable scheduled time (not one of ours: the decider
 * ignores it rather than guessing).
 */
export const observeRun = (
  metadata: {
    readonly name: string;
    readonly annotations?: Readonly<Record<string, string>> | undefined;
    readonly deletionTimestamp?: string | undefined;
  },
  status: TaskStatus | undefined,
): ObservedRun | undefined => {
  const scheduled = Date.parse(metadata.annotations?.[scheduledTimeAnnotation] ?? "");
  if (Number.isNaN(scheduled)) return undefined;
  const phase = phaseOf(status);
  const finished = phase === "Active" ? Number.NaN : Date.parse(status?.lastTransitionTime ?? "");
  return {
    name: metadata.name,
    scheduledTime: scheduled,
    phase,
    ...(Number.isNaN(finished) ? {} : { finishedAt: finished }),
    deleting: metadata.deletionTimestamp !== undefined,
  };
};
