/**
 * The lab's object store (testbin/gofakes3) is reachable from the host at its Service address, so by
 * every local user: it must take only requests signed (AWS Signature Version 4) with the key pair it
 * was started with, and serve the signed ones as before. The server runs here on 127.0.0.1; requests
 * are signed as the AWS SDKs sign them (etcd-backup-restore's client), and as curl signs them (the
 * end-to-end tests' bucket listing).
 */
import { execFile } from "node:child_process";
import { createHash, createHmac } from "node:crypto";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deadlineIn, pollUntil } from "../../src/devcluster/deadline.ts";
import { resolveObjectStoreBinary } from "../../src/devcluster/images/object-store-image.ts";
import {
  newObjectStoreCredentials,
  type ObjectStoreCredentials,
} from "../../src/devcluster/lab/object-store.ts";
import { freePort } from "../../src/devcluster/ports.ts";
import { type ManagedProcess, startProcess } from "../../src/devcluster/process.ts";

const region = "us-east-1";
const credentials = newObjectStoreCredentials();
let server: ManagedProcess | undefined;
let origin = "";

beforeAll(async () => {
  const binary = await resolveObjectStoreBinary();
  const port = await freePort();
  origin = `http://127.0.0.1:${port}`;
  server = startProcess({
    name: "gofakes3",
    command: binary,
    args: [`-listen=127.0.0.1:${port}`, "-bucket=bucket"],
    env: {
      PATH: process.env.PATH ?? "",
      S3_ACCESS_KEY_ID: credentials.accessKeyID,
      S3_SECRET_ACCESS_KEY: credentials.secretAccessKey,
    },
  });
  await pollUntil(
    async () =>
      (await fetch(`${origin}/`, { signal: AbortSignal.timeout(1_000) })).status > 0 ? true : undefined,
    { deadline: deadlineIn(20_000, "gofakes3 listening"), what: "gofakes3 listening", intervalMs: 100 },
  );
}, 60_000);
afterAll(async () => {
  await server?.stop(5_000);
});

const hex = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");
const hmac = (key: string | Buffer, data: string) => createHmac("sha256", key).update(data).digest();
/** SigV4's encoding: everything but the unreserved characters, upper-case hex. */
const encode = (text: string) =>
  encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

interface Signed {
  readonly method: "GET" | "PUT";
  readonly path: string;
  readonly query?: Readonly<Record<string, string>>;
  readonly body?: string;
  readonly signer?: ObjectStoreCredentials;
}

/** A request signed as the AWS SDKs sign it (x-amz-content-sha256, sorted query); its status and body. */
const signedRequest = async ({ method, path, query = {}, body = "", signer = credentials }: Signed) => {
  const amzDate = new Date()
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z");
  const day = amzDate.slice(0, 8);
  const host = new URL(origin).host;
  const payloadHash = hex(body);
  const canonicalQuery = Object.entries(query)
    .map(([key, value]) => `${encode(key)}=${encode(value)}`)
    .sort()
    .join("&");
  const signedHeaders = "host;x-amz-content-sha256;x-amz-date";
  const canonical = [
    method,
    path.split("/").map(encode).join("/"),
    canonicalQuery,
    `host:${host}\nx-amz-content-sha256:${payloadHash}\nx-amz-date:${amzDate}\n`,
    signedHeaders,
    payloadHash,
  ].join("\n");
  const scope = `${day}/${region}/s3/aws4_request`;
  const toSign = ["AWS4-HMAC-SHA256", amzDate, scope, hex(canonical)].join("\n");
  let key = hmac(`AWS4${signer.secretAccessKey}`, day);
  for (const part of [region, "s3", "aws4_request"]) key = hmac(key, part);
  const signature = createHmac("sha256", key).update(toSign).digest("hex");
  const url = `${origin}${path.split("/").map(encode).join("/")}${canonicalQuery === "" ? "" : `?${canonicalQuery}`}`;
  const response = await fetch(url, {
    method,
    signal: AbortSignal.timeout(5_000),
    headers: {
      "x-amz-date": amzDate,
      "x-amz-content-sha256": payloadHash,
      authorization: `AWS4-HMAC-SHA256 Credential=${signer.accessKeyID}/${scope}, SignedHeaders=${signedHeaders}, Signature=${signature}`,
    },
    ...(method === "PUT" ? { body } : {}),
  });
  return { status: response.status, text: await response.text() };
};

describe("the lab's object store checks the credentials it was given", () => {
  it("refuses unsigned requests, another key ID, another secret and presigned URLs", async () => {
    const unsigned = await fetch(`${origin}/bucket`, { signal: AbortSignal.timeout(5_000) });
    expect(unsigned.status).toBe(403);
    expect(await unsigned.text()).toContain("<Code>AccessDenied</Code>");
    const put = await fetch(`${origin}/bucket/planted`, {
      method: "PUT",
      body: "x",
      signal: AbortSignal.timeout(5_000),
    });
    expect(put.status).toBe(403);

    const other = newObjectStoreCredentials();
    const otherKey = await signedRequest({ method: "GET", path: "/bucket", signer: other });
    expect(otherKey).toMatchObject({ status: 403 });
    expect(otherKey.text).toContain("InvalidAccessKeyId");
    const otherSecret = await signedRequest({
      method: "GET",
      path: "/bucket",
      signer: { accessKeyID: credentials.accessKeyID, secretAccessKey: other.secretAccessKey },
    });
    expect(otherSecret).toMatchObject({ status: 403 });
    expect(otherSecret.text).toContain("SignatureDoesNotMatch");
    const presigned = await fetch(
      `${origin}/bucket?X-Amz-Signature=00&X-Amz-Credential=${credentials.accessKeyID}`,
      {
        signal: AbortSignal.timeout(5_000),
      },
    );
    expect(presigned.status).toBe(403);
  });

  it("serves requests signed with them: an object written, listed under its prefix and read back", async () => {
    const key = "/bucket/etcd-main/v2/Full-00000000-00000001-1";
    expect(await signedRequest({ method: "PUT", path: key, body: "snapshot bytes" })).toMatchObject({
      status: 200,
    });
    const listing = await signedRequest({
      method: "GET",
      path: "/bucket",
      query: { prefix: "etcd-main/v2/", "max-keys": "10" },
    });
    expect(listing.status).toBe(200);
    expect(listing.text).toContain("<Key>etcd-main/v2/Full-00000000-00000001-1</Key>");
    expect(await signedRequest({ method: "GET", path: key })).toEqual({
      status: 200,
      text: "snapshot bytes",
    });
    // The objects the refused requests tried to write are not there.
    expect(await signedRequest({ method: "GET", path: "/bucket/planted" })).toMatchObject({ status: 404 });
  });

  it("serves curl's signature (the end-to-end tests list the bucket with it)", async () => {
    const { stdout } = await promisify(execFile)(
      "curl",
      [
        ...["--silent", "--show-error", "--fail", "--max-time", "10"],
        ...[
          "--aws-sigv4",
          `aws:amz:${region}:s3`,
          "--user",
          `${credentials.accessKeyID}:${credentials.secretAccessKey}`,
        ],
        `${origin}/bucket?prefix=etcd-main%2Fv2%2F`,
      ],
      { timeout: 15_000 },
    );
    expect(stdout).toContain("<ListBucketResult");
  });
});
