/**
 * Text from the cluster made safe for the operator's terminal: a task author controls much of what the
 * CLI prints, and control characters can move the cursor, rewrite the screen, set the title or a link,
 * or reorder what is read (bidi). Every C0 (tab and newline included: the CLI adds its own breaks
 * after), DEL, C1 and bidi control is printed escaped (`\t`, `\n`, `\r`, else `\xHH` or `\uHHHH`); a
 * backslash is left as it is, so a text spelling `\x1b` prints like one holding ESC but cannot act as
 * one. Texts are capped first as the controller caps what it writes (src/api/text-cap.ts).
 */
import { capText } from "./text-cap.ts";

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
