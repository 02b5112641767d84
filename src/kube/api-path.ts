/** REST paths of the kube-apiserver: `/api/v1/…` for the core group, `/apis/GROUP/VERSION/…` otherwise. */
import {
  type InvalidPathName,
  invalidPathName,
  isDns1123Label,
  isDns1123Subdomain,
  isPathSegmentName,
  LabelRule,
  type PathField,
  PathSegmentRule,
  SubdomainRule,
} from "./names.ts";

export interface ApiResource {
  /** "" for the core group (pods, secrets, events of core/v1). */
  readonly group: string;
  readonly version: string;
  readonly plural: string;
}

/**
 * Every segment is escaped, "." and ".." included (they would move the path up). Escaping keeps the
 * path's shape on the wire only: the apiserver decodes escapes before routing, so the client refuses a
 * path whose names are not valid (`apiPathProblem`), and an escaped name never leaves the process.
 */
const segment = (value: string) =>
  value === "." || value === ".." ? value.replaceAll(".", "%2E") : encodeURIComponent(value);

/** The collection (no name) or one object, optionally a subresource of it; all namespaces without one. */
export const apiPath = (
  resource: ApiResource,
  namespace?: string,
  name?: string,
  subresource?: string,
): string => {
  const root =
    resource.group === ""
      ? `/api/${segment(resource.version)}`
      : `/apis/${segment(resource.group)}/${segment(resource.version)}`;
  const scope = namespace === undefined ? "" : `/namespaces/${segment(namespace)}`;
  const object =
    name === undefined
      ? ""
      : `/${segment(name)}${subresource === undefined ? "" : `/${segment(subresource)}`}`;
  return `${root}${scope}/${segment(resource.plural)}${object}`;
};

/** Groups whose object names Kubernetes checks only as path segment names ("system:controller:…"). */
const pathSegmentNamedGroups = new Set(["rbac.authorization.k8s.io"]);

/** A segment's value as the apiserver will read it (escapes decoded); undefined for a broken escape. */
const decoded = (raw: string): string | undefined => {
  try {
    return decodeURIComponent(raw);
  } catch {
    return undefined;
  }
};

/** Every segment, as the apiserver decodes it, must stay one segment: no "/", "%", "." or "..". */
const segmentProblem = (field: PathField, raw: string): InvalidPathName | undefined => {
  const value = decoded(raw);
  return value !== undefined && isPathSegmentName(value)
    ? undefined
    : invalidPathName(field, value ?? raw, PathSegmentRule);
};

/**
 * Why a request path must not be sent, or undefined. The client checks every path with this before
 * sending it (kube-client.ts), so every caller's names are checked once, here: a namespace must be a
 * DNS-1123 label, an object's name a DNS-1123 subdomain (path segment name for RBAC objects), as the
 * apiserver requires of the objects themselves; and no segment up to the subresource may decode to
 * something holding "/" or "%", to "." or "..", or be empty. `apiPath` escapes what it is given, so a bad name reaches this
 * check as such (`e005/status` as `e005%2Fstatus`) and is reported as the caller gave it. Paths
 * outside `/api` and `/apis` (`/version`, `/healthz`) are checked segment by segment only.
 */
export const apiPathProblem = (path: string): InvalidPathName | undefined => {
  const segments = path.split("/").slice(1);
  const [top, ...rest] = segments;
  const rootLength = top === "api" ? 1 : top === "apis" ? 2 : undefined;
  if (rootLength === undefined) {
    for (const segment of segments) {
      const problem = segmentProblem("path segment", segment);
      if (problem !== undefined) return problem;
    }
    return undefined;
  }
  const root = rest.slice(0, rootLength);
  for (const segment of root) {
    const problem = segmentProblem("path segment", segment);
    if (problem !== undefined) return problem;
  }
  const group = top === "apis" ? (root[0] ?? "") : "";
  let scoped = rest.slice(rootLength);
  if (scoped[0] === "namespaces" && scoped.length >= 2) {
    const namespace = scoped[1] ?? "";
    const value = decoded(namespace);
    if (value === undefined || !isDns1123Label(value))
      return invalidPathName("namespace", value ?? namespace, LabelRule);
    // `/api/v1/namespaces/NAME` is the Namespace object itself, its name checked above; with a
    // subresource (`/status`), that segment is checked as a collection's would be.
    scoped = scoped.slice(2);
  }
  const [plural, name, subresource] = scoped;
  if (plural !== undefined) {
    const problem = segmentProblem("path segment", plural);
    if (problem !== undefined) return problem;
  }
  if (name !== undefined) {
    const value = decoded(name);
    const rbac = pathSegmentNamedGroups.has(group);
    if (value === undefined || !(rbac ? isPathSegmentName(value) : isDns1123Subdomain(value)))
      return invalidPathName("name", value ?? name, rbac ? PathSegmentRule : SubdomainRule);
  }
  if (subresource !== undefined) return segmentProblem("subresource", subresource);
  return undefined;
};
