/** REST paths of the kube-apiserver: `/api/v1/…` for the core group, `/apis/GROUP/VERSION/…` otherwise. */

export interface ApiResource {
  /** "" for the core group (pods, secrets, events of core/v1). */
  readonly group: string;
  readonly version: string;
  readonly plural: string;
}

const segment = (value: string) => encodeURIComponent(value);

/** The collection (no name) or one object, optionally a subresource of it; all namespaces without one. */
export const apiPath = (
  resource: ApiResource,
  namespace?: string,
  name?: string,
  subresource?: string,
): string => {
  const root =
    resource.group === "" ? `/api/${resource.version}` : `/apis/${resource.group}/${resource.version}`;
  const scope = namespace === undefined ? "" : `/namespaces/${segment(namespace)}`;
  const object =
    name === undefined ? "" : `/${segment(name)}${subresource === undefined ? "" : `/${subresource}`}`;
  return `${root}${scope}/${resource.plural}${object}`;
};
