/**
 * The description of a completed maintenance task: what was done and what it changed, e.g.
 * `Compacted to revision 1234 (physical); defragmented 2 member(s): etcd-main-0 db size 8.2 MiB → 1.1 MiB,
 * etcd-main-1 db size 8.0 MiB → 1.1 MiB`. Each member is named (a cluster has few), and the whole text
 * is capped at the status text cap.
 */

import { capText, MaxEchoLength } from "../../advanced.ts";

/** Binary units with one decimal (`8.2 MiB`), whole bytes below 1 KiB. */
export const formatBytes = (bytes: number): string => {
  const units = ["KiB", "MiB", "GiB", "TiB"] as const;
  if (bytes < 1024) return `${bytes} B`;
  let value = bytes / 1024;
  let unit: (typeof units)[number] = "KiB";
  for (const next of units.slice(1)) {
    if (value < 1024) break;
    value /= 1024;
    unit = next;
  }
  return `${value.toFixed(1)} ${unit}`;
};

export interface CompactionReport {
  readonly revision: number;
  readonly physical: boolean;
  /** etcd said the revision was already compacted: a repeated Execute, or etcd's auto-compaction. */
  readonly alreadyCompacted: boolean;
  /** Of the member behind the client endpoint, before and after the compaction. */
  readonly dbSize: number;
  readonly dbSizeInUseBefore: number;
  readonly dbSizeInUseAfter: number;
}

/** One defragmented member: its name (`member <id>` when it has none) and its db size around the call. */
export interface MemberDefragmentation {
  readonly member: string;
  readonly dbSizeBefore: number;
  readonly dbSizeAfter: number;
}

export interface DefragmentationReport {
  /** In the order they were defragmented. */
  readonly members: ReadonlyArray<MemberDefragmentation>;
  readonly learnersSkipped: number;
}

export interface MaintenanceReport {
  readonly compaction?: CompactionReport;
  readonly defragmentation?: DefragmentationReport;
}

const compactionText = (report: CompactionReport): string =>
  report.alreadyCompacted
    ? `revision ${report.revision} was already compacted`
    : `compacted to revision ${report.revision}${report.physical ? " (physical)" : ""}`;

const defragmentationText = (report: DefragmentationReport): string => {
  const skipped = report.learnersSkipped === 0 ? "" : `, skipped ${report.learnersSkipped} learner(s)`;
  const sizes = report.members
    .map(
      (each) =>
        `${capText(each.member, MaxEchoLength)} db size ${formatBytes(each.dbSizeBefore)} → ${formatBytes(each.dbSizeAfter)}`,
    )
    .join(", ");
  return `defragmented ${report.members.length} member(s)${skipped}: ${sizes}`;
};

const sizeText = (report: CompactionReport): string =>
  `db size ${formatBytes(report.dbSize)}, in use ${formatBytes(report.dbSizeInUseBefore)} → ${formatBytes(report.dbSizeInUseAfter)}`;

export const describeReport = (report: MaintenanceReport): string => {
  const parts: string[] = [];
  if (report.compaction !== undefined) parts.push(compactionText(report.compaction));
  if (report.defragmentation !== undefined) parts.push(defragmentationText(report.defragmentation));
  else if (report.compaction !== undefined) parts.push(sizeText(report.compaction));
  const text = parts.join("; ");
  return text === "" ? "Nothing to do" : capText(`${text.charAt(0).toUpperCase()}${text.slice(1)}`);
};
