/**
 * The controller's cache of the objects that name admission groups (Etcds for EtcdOpsTask), shared
 * with the handlers that read them: a reader looks in the cache of the task's namespace first (the
 * controller attaches one per watched namespace while it runs) and asks the apiserver on a miss.
 * `keep` says what the cache holds of each object, so 10,000 large objects do not fill the memory.
 */
import type { KubeObject } from "../kube/object.ts";

export type ObjectLookup = (namespace: string, name: string) => KubeObject | undefined;

export interface GroupObjects {
  /** What the cache keeps of each object as it arrives (default: all but managedFields). */
  readonly keep?: (object: KubeObject) => KubeObject;
  /** The cached object, from any attached cache; undefined when none holds it. */
  readonly get: ObjectLookup;
  /** A controller's cache while it runs; answers how to detach it (when the controller stops). */
  readonly attach: (lookup: ObjectLookup) => () => void;
}

export const makeGroupObjects = (keep?: (object: KubeObject) => KubeObject): GroupObjects => {
  const caches = new Set<ObjectLookup>();
  return {
    ...(keep === undefined ? {} : { keep }),
    get: (namespace, name) => {
      for (const lookup of caches) {
        const found = lookup(namespace, name);
        if (found !== undefined) return found;
      }
      return undefined;
    },
    attach: (lookup) => {
      // A wrapper per attachment: the same function attached twice is detached once each.
      const entry: ObjectLookup = (namespace, name) => lookup(namespace, name);
      caches.add(entry);
      return () => {
        caches.delete(entry);
      };
    },
  };
};
