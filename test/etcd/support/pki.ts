/**
 * A tiny test PKI built with node:crypto alone (Node can parse X.509 but not issue it): a CA and
 * server certificates signed by it, ECDSA P-256 with SHA-256, encoded by hand in DER. Enough for TLS
 * servers in tests; nothing here is meant for production.
 */
import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from "node:crypto";

// --- DER ------------------------------------------------------------------------------------------

const length = (n: number): Buffer => {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let rest = n; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
};

const tlv = (tag: number, ...content: Buffer[]): Buffer => {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), length(body.length), body]);
};

const sequence = (...items: Buffer[]) => tlv(0x30, ...items);
const set = (...items: Buffer[]) => tlv(0x31, ...items);
const octetString = (content: Buffer) => tlv(0x04, content);
const bitString = (content: Buffer) => tlv(0x03, Buffer.from([0]), content);
const boolean = (value: boolean) => tlv(0x01, Buffer.from([value ? 0xff : 0]));
const utf8String = (text: string) => tlv(0x0c, Buffer.from(text, "utf8"));
const explicit = (n: number, content: Buffer) => tlv(0xa0 | n, content);

const integer = (value: Buffer): Buffer => {
  let bytes = value;
  while (bytes.length > 1 && bytes[0] === 0 && ((bytes[1] ?? 0) & 0x80) === 0) bytes = bytes.subarray(1);
  return tlv(0x02, (bytes[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes);
};

const oid = (dotted: string): Buffer => {
  const [first = 0, second = 0, ...rest] = dotted.split(".").map(Number);
  const bytes = [40 * first + second];
  for (const arc of rest) {
    const chunk = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift(0x80 | (v & 0x7f));
    bytes.push(...chunk);
  }
  return tlv(0x06, Buffer.from(bytes));
};

/** UTCTime before 2050, GeneralizedTime after (RFC 5280 §4.1.2.5). */
const time = (date: Date): Buffer => {
  const iso = date.toISOString().replace(/[-:T]/g, "").slice(0, 14);
  return date.getUTCFullYear() < 2050
    ? tlv(0x17, Buffer.from(`${iso.slice(2)}Z`, "ascii"))
    : tlv(0x18, Buffer.from(`${iso}Z`, "ascii"));
};

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
