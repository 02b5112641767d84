/**
 * Kubernetes object names, checked before a name taken from a task (or from an object a task points
 * at) goes into a request path. The apiserver decodes percent-escapes before it routes a request, so
 * escaping alone does not keep a name in its segment: `e005%2Fstatus` is read as the status
 * subresource of `e005`. A name that is not a valid object name cannot name an object, and is refused
 * before any request.
 */
import * as Data from "effect/Data";
import { capText, MaxEchoLength } from "../api/text-cap.ts";

/** RFC 1123 subdomain: most object names (Secrets, StatefulSets, custom resources). */
const subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** RFC 1123 label: namespaces, Services, and names that become a label value or a host name. */
const label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export const MaxSubdomainLength = 253;
export const MaxLabelLength = 63;

export const isDns1123Subdomain = (name: string): boolean =>
  name.length <= MaxSubdomainLength && subdomain.test(name);

export const isDns1123Label = (name: string): boolean => name.length <= MaxLabelLength && label.test(name);

export const SubdomainRule =
  "a DNS-1123 subdomain: at most 253 lower-case letters, digits, '-' and '.', starting and ending with a letter or digit";
export const LabelRule =
  "a DNS-1123 label: at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit";

/** `value` quoted for an error text, at most `MaxEchoLength` characters of it. */
export const echo = (value: string): string => JSON.stringify(capText(value, MaxEchoLength));

/** Why `name` is not a valid object name (a DNS-1123 subdomain), or undefined when it is. */
export const subdomainProblem = (name: string): string | undefined =>
  isDns1123Subdomain(name) ? undefined : `${echo(name)} is not a valid name: expected ${SubdomainRule}`;

/** The part of an API path a bad value was in. */
export type PathField = "namespace" | "name" | "subresource" | "path segment";

/**
 * A name, namespace or other segment that cannot go into an API path: refused before any request, for
 * every caller of the client. The apiserver decodes escapes before it routes, so such a value would
 * name another path (`e005/status` the status subresource of e005, `..` the collection's parent).
 */
export class InvalidPathName extends Data.TaggedError("InvalidPathName")<{
  readonly field: PathField;
  /** The offending value as the caller gave it (escapes decoded), capped for echoing. */
  readonly value: string;
  /** What the field must be. */
  readonly rule: string;
  readonly message: string;
}> {}

export const invalidPathName = (field: PathField, value: string, rule: string): InvalidPathName =>
  new InvalidPathName({
    field,
    value: capText(value, MaxEchoLength),
    rule,
    message: `${field} ${echo(value)} cannot go into an API path: expected ${rule}`,
  });

/**
 * What every name must be, whatever its resource: the apiserver's storage refuses any other (apimachinery's
 * path segment name): not empty, not "." or "..", no "/" and no "%".
 */
export const PathSegmentRule = 'a path segment name: not empty, not "." or "..", without "/" or "%"';

export const isPathSegmentName = (value: string): boolean =>
  value !== "" && value !== "." && value !== ".." && !value.includes("/") && !value.includes("%");
