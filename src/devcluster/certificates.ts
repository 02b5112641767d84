// Test certificates made with node:crypto and hand-written DER (runtime/der.ts, as the controller's
// self-signed metrics certificate): a CA, and leaf certificates it signs for server and client
// authentication, with DNS names (wildcards allowed) and IPv4 addresses. ECDSA P-256 with SHA-256,
// valid one day: test material, never for production.
import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from "node:crypto";
import { isIP } from "node:net";
import {
  bitString,
  boolean,
  explicit,
  integer,
  octetString,
  oid,
  sequence,
  set,
  time,
  tlv,
  utf8String,
} from "../runtime/der.ts";

export interface PemPair {
  readonly certPem: string;
  readonly keyPem: string;
}

export interface Issuer {
  readonly subject: string;
  readonly key: KeyObject;
  readonly keyId: Buffer;
}

export type Usage = "serverAuth" | "clientAuth";
const usageOid: Record<Usage, string> = {
  serverAuth: "1.3.6.1.5.5.7.3.1",
  clientAuth: "1.3.6.1.5.5.7.3.2",
};

const name = (commonName: string) => sequence(set(sequence(oid("2.5.4.3"), utf8String(commonName))));
const extension = (id: string, critical: boolean, value: Buffer) =>
  sequence(oid(id), ...(critical ? [boolean(true)] : []), octetString(value));
const ecdsaWithSha256 = sequence(oid("1.2.840.10045.4.3.2"));

const ipv4Bytes = (address: string): Buffer => Buffer.from(address.split(".").map(Number));

const alternativeName = (entry: string): Buffer =>
  isIP(entry) === 4 ? tlv(0x87, ipv4Bytes(entry)) : tlv(0x82, Buffer.from(entry, "ascii"));

const pem = (der: Buffer): string =>
  `-----BEGIN CERTIFICATE-----\n${der.toString("base64").replace(/.{64}/g, "$&\n").replace(/\n$/, "")}\n-----END CERTIFICATE-----\n`;

export interface CertificateSpec {
  readonly subject: string;
  readonly issuer: Issuer | undefined;
  readonly ca: boolean;
  readonly usages: ReadonlyArray<Usage>;
  /** DNS names (wildcards allowed) and IPv4 addresses. */
  readonly names: ReadonlyArray<string>;
}

/** A certificate for `spec`, signed by its issuer (self-signed without one), with its key. */
export const issueCertificate = (spec: CertificateSpec): PemPair & Issuer => {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const spki = publicKey.export({ type: "spki", format: "der" });
  // RFC 5280 §4.2.1.2 method 1: SHA-1 of the public key bits (the 65-byte point ending the SPKI).
  const keyId = createHash("sha1")
    .update(spki.subarray(spki.length - 65))
    .digest();
  const now = Date.now();
  const extensions = [
    extension("2.5.29.19", true, sequence(...(spec.ca ? [boolean(true)] : []))),
    // keyUsage: keyCertSign + cRLSign for the CA; digitalSignature otherwise.
    extension(
      "2.5.29.15",
      true,
      spec.ca ? tlv(0x03, Buffer.from([1, 0x06])) : tlv(0x03, Buffer.from([7, 0x80])),
    ),
    extension("2.5.29.14", false, octetString(keyId)),
    ...(spec.issuer === undefined
      ? []
      : [extension("2.5.29.35", false, sequence(tlv(0x80, spec.issuer.keyId)))]),
    ...(spec.usages.length === 0
      ? []
      : [extension("2.5.29.37", false, sequence(...spec.usages.map((usage) => oid(usageOid[usage]))))]),
    ...(spec.names.length === 0
      ? []
      : [extension("2.5.29.17", false, sequence(...spec.names.map(alternativeName)))]),
  ];
  const serial = randomBytes(12);
  serial[0] = (serial[0] ?? 0) & 0x7f;
  const tbs = sequence(
    explicit(0, integer(Buffer.from([2]))),
    integer(serial),
    ecdsaWithSha256,
    name(spec.issuer?.subject ?? spec.subject),
    sequence(time(new Date(now - 3_600_000)), time(new Date(now + 86_400_000))),
    name(spec.subject),
    spki,
    explicit(3, sequence(...extensions)),
  );
  const der = sequence(tbs, ecdsaWithSha256, bitString(sign("sha256", tbs, spec.issuer?.key ?? privateKey)));
  return {
    certPem: pem(der),
    keyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
    subject: spec.subject,
    key: privateKey,
    keyId,
  };
};
