/**
 * Text from the cluster made safe for the operator's terminal. A task author controls much of what the
 * CLI prints (a rejected image's name in an error, a description), and a terminal obeys control
 * characters: ESC sequences can move the cursor, rewrite what is shown, set the window title or a
 * hyperlink; bidi overrides reorder what is read. So every such character is printed escaped instead:
 * C0 (tab and newline too: inside a cell or a field they would break the layout; the CLI's own line
 * breaks are added after), DEL, C1, and the bidi controls. `\t`, `\n`, `\r` read as such, others as
 * `\xHH` or `\uHHHH`. A backslash is left as it is, so a text that spells `\x1b` prints the same as one
 * holding ESC; it cannot act as one. Texts are capped first as the controller caps what it writes
 * (src/api/text-cap.ts), so a status written by hand cannot flood the screen either.
 */
import { capText } from "../../api/text-cap.ts";

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding them is what this module is for.
const unsafe = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

const named: Readonly<Record<string, string>> = { "\t": "\\t", "\n": "\\n", "\r": "\\r" };

const escaped = (char: string): string => {
  const code = char.charCodeAt(0);
  return (
    named[char] ??
    (code <= 0xff ? `\\x${code.toString(16).padStart(2, "0")}` : `\\u${code.toString(16).padStart(4, "0")}`)
  );
};

/** `text`, capped and with every control character shown escaped. Idempotent. */
export const terminalText = (text: string): string => capText(text).replace(unsafe, escaped);
