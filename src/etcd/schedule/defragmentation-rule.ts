/**
 * When a scheduled defragmentation is worth running, from each member's reported sizes (etcd's
 * `/v3/maintenance/status`: `dbSize`, the file, and `dbSizeInUse`, the part holding data). A member
 * reclaims `dbSize - dbSizeInUse`; the run goes ahead when some member would reclaim at least
 * `minReclaimBytes` (default 1) and that is at least `minFragmentationPercent` of its file (default
 * 0); a member that would reclaim nothing never counts, whatever the thresholds. Pure; the guard (defragmentation-guard.ts) reads
 * the sizes.
 */
import * as Result from "effect/Result";
import type { GuardVerdict } from "../../advanced.ts";

export interface MemberSize {
  readonly member: string;
  readonly dbSize: number;
  readonly dbSizeInUse: number;
}

export interface DefragmentationRule {
  readonly minReclaimBytes: number;
  readonly minFragmentationPercent: number;
}

const units: Readonly<Record<string, number>> = { "": 1, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 };

/** `spec.guard.parameters` as a rule, or a message naming the parameter and what it accepts. */
export const parseDefragmentationRule = (
  parameters: Readonly<Record<string, string>>,
): Result.Result<DefragmentationRule, string> => {
  const unknown = Object.keys(parameters).filter(
    (key) => key !== "minReclaimBytes" && key !== "minFragmentationPercent",
  );
  if (unknown.length > 0)
    return Result.fail(
      `spec.guard.parameters.${unknown[0]}: the defragmentation guard takes minReclaimBytes and minFragmentationPercent only`,
    );
  const bytes = parameters.minReclaimBytes ?? "1";
  const size = /^([0-9]{1,15})(Ki|Mi|Gi)?$/u.exec(bytes);
  if (size === null)
    return Result.fail(
      `spec.guard.parameters.minReclaimBytes: "${bytes}" is not a size (e.g. 104857600 or 100Mi)`,
    );
  const percentText = parameters.minFragmentationPercent ?? "0";
  const percent = Number(percentText);
  if (!/^[0-9]+(\.[0-9]+)?$/u.test(percentText) || percent > 100)
    return Result.fail(
      `spec.guard.parameters.minFragmentationPercent: "${percentText}" is not a percentage from 0 to 100`,
    );
  return Result.succeed({
    minReclaimBytes: Number(size[1]) * (units[size[2] ?? ""] ?? 1),
    minFragmentationPercent: percent,
  });
};

const mib = (bytes: number) => `${(bytes / 1024 ** 2).toFixed(1)} MiB`;

export const defragmentationVerdict = (
  members: ReadonlyArray<MemberSize>,
  rule: DefragmentationRule,
): GuardVerdict => {
  const worth = (size: MemberSize) => {
    const reclaim = size.dbSize - size.dbSizeInUse;
    return (
      reclaim > 0 &&
      reclaim >= rule.minReclaimBytes &&
      (size.dbSize === 0 ? 0 : (reclaim / size.dbSize) * 100) >= rule.minFragmentationPercent
    );
  };
  if (members.some(worth)) return { allow: true };
  const sizes = members
    .map(
      (size) => `${size.member}: ${mib(size.dbSize - size.dbSizeInUse)} of ${mib(size.dbSize)} reclaimable`,
    )
    .join(", ");
  return {
    allow: false,
    reason: `no member would reclaim ${rule.minReclaimBytes} bytes and ${rule.minFragmentationPercent}% of its file (${sizes || "no members"})`,
  };
};
