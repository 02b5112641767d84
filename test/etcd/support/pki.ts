/**
 * A tiny test PKI built with node:crypto alone (Node can parse X.509 but not issue it): a CA and
 * server certificates signed by it, ECDSA P-256 with SHA-256, encoded by hand in DER. Enough for TLS
 * servers in tests; nothing here is meant for production.
 */
import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from "node:crypto";
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
} from "../../../src/runtime/der.ts";

const name = (commonName: string) => sequence(set(sequence(oid("2.5.4.3"), utf8String(commonName))));
const extension = (id: string, critical: boolean, value: Buffer) =>
  sequence(oid(id), ...(critical ? [boolean(true)] : []), octetString(value));

const ecdsaWithSha256 = sequence(oid("1.2.840.10045.4.3.2"));

// --- certificates ---------------------------------------------------------------------------------

export interface Issued {
  readonly certPem: string;
  readonly keyPem: string;
  readonly key: KeyObject;
  readonly subject: string;
  readonly keyId: Buffer;
}

const toPem = (der: Buffer): string =>
  `-----BEGIN CERTIFICATE-----\n${der
    .toString("base64")
    .match(/.{1,64}/g)
    ?.join("\n")}\n-----END CERTIFICATE-----\n`;

interface CertificateSpec {
  readonly subject: string;
  readonly issuer: Issued | undefined;
  readonly ca: boolean;
  readonly dnsNames: ReadonlyArray<string>;
}

const issue = (spec: CertificateSpec): Issued => {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const spki = publicKey.export({ type: "spki", format: "der" });
  // The key identifier is the SHA-1 of the public key bits (RFC 5280 §4.2.1.2, method 1); for P-256
  // the SPKI ends with the 65-byte uncompressed point.
  const keyId = createHash("sha1")
    .update(spki.subarray(spki.length - 65))
    .digest();
  const signer = spec.issuer;
  const now = Date.now();
  const extensions = [
    extension("2.5.29.19", true, sequence(...(spec.ca ? [boolean(true)] : []))),
    extension(
      "2.5.29.15",
      true,
      spec.ca ? tlv(0x03, Buffer.from([1, 0x06])) : tlv(0x03, Buffer.from([7, 0x80])),
    ),
    extension("2.5.29.14", false, octetString(keyId)),
    ...(signer === undefined ? [] : [extension("2.5.29.35", false, sequence(tlv(0x80, signer.keyId)))]),
    ...(spec.ca ? [] : [extension("2.5.29.37", false, sequence(oid("1.3.6.1.5.5.7.3.1")))]),
    ...(spec.dnsNames.length === 0
      ? []
      : [
          extension(
            "2.5.29.17",
            false,
            sequence(...spec.dnsNames.map((dns) => tlv(0x82, Buffer.from(dns, "ascii")))),
          ),
        ]),
  ];
  const serial = randomBytes(12);
  serial[0] = (serial[0] ?? 0) & 0x7f;
  const tbs = sequence(
    explicit(0, integer(Buffer.from([2]))),
    integer(serial),
    ecdsaWithSha256,
    name(signer?.subject ?? spec.subject),
    sequence(time(new Date(now - 3_600_000)), time(new Date(now + 86_400_000))),
    name(spec.subject),
    spki,
    explicit(3, sequence(...extensions)),
  );
  const signature = sign("sha256", tbs, signer?.key ?? privateKey);
  const der = sequence(tbs, ecdsaWithSha256, bitString(signature));
  return {
    certPem: toPem(der),
    keyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
    key: privateKey,
    subject: spec.subject,
    keyId,
  };
};

/** A self-signed CA. */
export const makeCA = (commonName = "opstask test CA"): Issued =>
  issue({ subject: commonName, issuer: undefined, ca: true, dnsNames: [] });

/** A server certificate for `dnsNames`, signed by `ca`. */
export const makeServerCertificate = (ca: Issued, dnsNames: ReadonlyArray<string>): Issued =>
  issue({ subject: dnsNames[0] ?? "server", issuer: ca, ca: false, dnsNames });
