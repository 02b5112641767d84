/**
 * Bounded texts. Whatever the controller copies from a task, an object or a server's answer into a
 * status, an Event or a log line is capped here, so that a 10,000-character name or a megabyte error
 * page cannot make the status (or the controller's memory) grow with the input.
 */

/** The longest text of one status field (a description, an error message or cause) the controller writes. */
export const MaxStatusTextLength = 1024;

/** The longest echo of an offending value inside an error text. */
export const MaxEchoLength = 100;

/**
 * `text` when it has at most `max` characters, else its start and how much was cut, `max` characters
 * in all (never splitting a surrogate pair).
 */
export const capText = (text: string, max: number = MaxStatusTextLength): string => {
  if (text.length <= max) return text;
  const marker = (cut: number) => `… (${cut} more characters)`;
  let keep = Math.max(0, max - marker(text.length).length);
  const code = text.charCodeAt(keep - 1);
  if (code >= 0xd800 && code <= 0xdbff) keep -= 1;
  return `${text.slice(0, keep)}${marker(text.length - keep)}`;
};
