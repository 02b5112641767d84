/** The task CLI's commands, known to `opstask` without loading them (src/cli/main.ts). */
export const taskCommandNames = [
  "snapshot",
  "maintain",
  "get",
  "describe",
  "wait",
  "delete",
  "history",
] as const;
