/** The benchmarks' command-line flags: `--name value`, read as given. */

/** The value after `--name`, or undefined when the flag is absent. */
export const argValue = (name: string): string | undefined => {
  const at = process.argv.indexOf(`--${name}`);
  return at === -1 ? undefined : process.argv[at + 1];
};

/** A non-negative integer flag; `fallback` when absent, an error naming the flag when not a number. */
export const intArg = (name: string, fallback: number): number => {
  const value = argValue(name);
  const parsed = value === undefined ? fallback : Number.parseInt(value, 10);
  if (!Number.isFinite(parsed) || parsed < 0) throw new Error(`--${name} wants a number, got ${value}`);
  return parsed;
};
