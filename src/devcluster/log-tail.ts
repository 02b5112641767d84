/**
 * The last lines of each started component's output, kept for the error that reports a failed start
 * (and echoed to stderr when verbose). Shared by the control plane, the backup-restore sidecar and the
 * local node.
 */
export class LogTail {
  readonly #lines = new Map<string, string[]>();
  readonly #max: number;
  readonly #echo: boolean;
  constructor(max: number, echo: boolean) {
    this.#max = max;
    this.#echo = echo;
  }
  sink(component: string): (line: string) => void {
    const lines: string[] = [];
    this.#lines.set(component, lines);
    return (line) => {
      lines.push(line);
      if (lines.length > this.#max) lines.shift();
      if (this.#echo) process.stderr.write(`[${component}] ${line}\n`);
    };
  }
  /** Most recently started component first (that is usually the one that failed). */
  render(n: number): string {
    return [...this.#lines]
      .reverse()
      .map(
        ([component, lines]) =>
          `--- ${component} (last ${Math.min(n, lines.length)} lines) ---\n${lines.slice(-n).join("\n")}`,
      )
      .join("\n");
  }
}
