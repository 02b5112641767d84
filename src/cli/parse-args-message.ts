/** node:util parseArgs's error text, cut to its first sentence (the rest explains `--` for positionals). */
export const parseArgsMessage = (error: unknown): string => {
  const message = error instanceof Error ? error.message : String(error);
  return message.replace(/\. To specify a positional argument[\s\S]*$/, "");
};
