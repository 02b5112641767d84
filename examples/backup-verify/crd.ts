/**
 * The BackupVerification CRD, generated from the schema the operator decodes with. crd.yaml beside
 * this file is its output (a test keeps it current):
 *
 *   node --conditions=opstask-source src/cli/main.ts crd --module examples/backup-verify/crd.ts \
 *     --export backupVerificationCrd -o examples/backup-verify/crd.yaml
 */
import { taskCrd } from "opstask/crd";
import { BackupVerificationSpec, backupVerificationKind } from "./backup-verification.ts";

export const backupVerificationCrd = taskCrd(backupVerificationKind, BackupVerificationSpec, {
  description: "A one-off verification of a backup; deleted ttlSecondsAfterFinished after it ends.",
  shortNames: ["bv"],
  printerColumns: [{ name: "Backup", type: "string", jsonPath: ".spec.backupName" }],
});
