/**
 * The lab's object store as the tests read it, from the node's network namespace (its Service
 * address; no cluster DNS there) with the store's key pair, as every client must: the snapshots under
 * the etcd's prefix, and a credentials directory in etcd-backup-restore's S3 format for an
 * `etcdbrctl restore` run on the host.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Lab } from "./start-lab.ts";

/**
 * A curl configuration (in the lab's directory, 0600) that signs with the store's key pair: in a file,
 * because a command line is readable by every local user.
 */
const signingConfig = (lab: Lab): string => {
  const { objectStore } = lab;
  const path = join(lab.dir, "object-store.curlrc");
  writeFileSync(
    path,
    `aws-sigv4 = "aws:amz:${objectStore.region}:s3"\nuser = "${objectStore.accessKeyID}:${objectStore.secretAccessKey}"\n`,
    { mode: 0o600 },
  );
  return path;
};

/** The names of the snapshots (`Full-…`, `Incr-…`) in the store under the etcd's prefix, sorted. */
export const snapshotNames = async (lab: Lab): Promise<string[]> => {
  const { cluster, objectStore, etcd } = lab;
  const prefix = `${etcd.spec.storePrefix}/v2/`;
  // Encoded here, upper-case as Signature Version 4 wants it (curl 7.88's --data-urlencode writes %2f).
  const query = `prefix=${encodeURIComponent(prefix)}`;
  const listing = await cluster.run("curl", [
    ...["--config", signingConfig(lab)],
    ...["--silent", "--show-error", "--fail", "--max-time", "10"],
    `http://${objectStore.address}/${objectStore.bucket}?${query}`,
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
