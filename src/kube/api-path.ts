/** REST paths of the kube-apiserver: `/api/v1/…` for the core group, `/apis/GROUP/VERSION/…` otherwise. */

export interface ApiResource {
  /** "" for the core group (pods, secrets, events of core/v1). */
  readonly group: string;
  readonly version: string;
  readonly plural: string;
}

/**
 * Every segment is escaped, "." and ".." included (they would move the path up). Escaping keeps the
 * path's shape on the wire only: the apiserver decodes escapes before routing, so a name from an
 * untrusted source must be checked as an object name first (`names.ts`).
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
