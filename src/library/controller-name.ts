/**
 * The name a kind's controller goes by when its author gives none: the field manager of its writes
 * and the `reportingController` of its Events, so that `managedFields` and `kubectl events` tell one
 * operator's controller from another's.
 */
import type { ResourceRef } from "../reconcile/task-kind.ts";

/** A qualified name's part after the `/`: at most 63 characters (events.k8s.io checks it). */
const maxNameLength = 63;
/** The longest `reportingController` and `fieldManager` the API server accepts. */
const maxLength = 128;

/**
 * `<group>/<plural>-controller`, e.g. `examples.opstask.dev/backupverifications-controller`: a
 * qualified name, as an Event's `reportingController` must be. A plural too long for the suffix keeps
 * none, and a name past 128 characters drops the group.
 */
export const defaultControllerName = (resource: Pick<ResourceRef, "group" | "plural">): string => {
  const suffixed = `${resource.plural}-controller`;
  const name = suffixed.length <= maxNameLength ? suffixed : resource.plural;
  const qualified = `${resource.group}/${name}`;
  return resource.group === "" || qualified.length > maxLength ? name : qualified;
};
