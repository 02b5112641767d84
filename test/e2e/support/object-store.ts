/**
 * The lab's object store as the tests read it, from the node's network namespace (its Service
 * address; no cluster DNS there): the snapshots under the etcd's prefix, and a credentials
 * directory in etcd-backup-restore's S3 format for an `etcdbrctl restore` run on the host.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Lab } from "./start-lab.ts";

/** The names of the snapshots (`Full-…`, `Incr-…`) in the store under the etcd's prefix, sorted. */
export const snapshotNames = async (lab: Lab): Promise<string[]> => {
  const { cluster, objectStore, etcd } = lab;
  const prefix = `${etcd.spec.storePrefix}/v2/`;
  const listing = await cluster.run("curl", [
    ...["--silent", "--show-error", "--fail", "--max-time", "10", "--get"],
    ...["--data-urlencode", `prefix=${prefix}`],
    `http://${objectStore.address}/${objectStore.bucket}`,
  ]);
  if (!listing.includes("<ListBucketResult"))
    throw new Error(`not a bucket listing: ${listing.slice(0, 500)}`);
  if (listing.includes("<IsTruncated>true</IsTruncated>"))
    throw new Error("the bucket listing is truncated (more than 1000 objects)");
  return [...listing.matchAll(/<Key>([^<]*)<\/Key>/g)]
    .map((match) => (match[1] ?? "").slice(prefix.length))
    .filter((name) => name !== "" && !name.includes("/"))
    .sort();
};

/** Writes the S3 credential files etcd-backup-restore reads from AWS_APPLICATION_CREDENTIALS; returns the directory. */
export const hostCredentialsDirectory = (lab: Lab, dir: string): string => {
  const { objectStore } = lab;
  mkdirSync(dir, { recursive: true });
  const files = {
    accessKeyID: objectStore.accessKeyID,
    secretAccessKey: objectStore.secretAccessKey,
    region: objectStore.region,
    endpoint: `http://${objectStore.address}`,
    s3ForcePathStyle: "true",
  };
  for (const [name, value] of Object.entries(files)) writeFileSync(join(dir, name), value);
  return dir;
};
