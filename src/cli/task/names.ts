/** The task CLI's commands, known to `opstask` without loading them (src/cli/main.ts). */
export const taskCommandNames = [
  "snapshot",
  "maintain",
  "recover-quorum",
  "get",
  "describe",
  "wait",
  "delete",
  "cancel",
  "history",
] as const;
