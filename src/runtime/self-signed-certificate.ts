/**
 * A self-signed serving certificate made at start-up, for `--metrics-secure` without certificate files
 * (as controller-runtime does): ECDSA P-256, SHA-256, valid for a year, for the given DNS names and IP
 * addresses. It encrypts the token and the answer but cannot be verified; give `--metrics-tls-cert-file`
 * and `--metrics-tls-key-file` for one that can. Encoded by hand (der.ts) in the fixed shape of
 * RFC 5280 §4.1 with three extensions; why no library: docs/design-notes.md §14.
 */
import { generateKeyPairSync, randomBytes, sign } from "node:crypto";
import { isIP, isIPv4 } from "node:net";
import { bitString, explicit, octetString, oid, sequence, set, time, tlv, utf8String } from "./der.ts";

const ipBytes = (address: string): Buffer =>
  isIPv4(address)
    ? Buffer.from(address.split(".").map(Number))
    : Buffer.from(
        // Expand `::` and write the eight 16-bit groups.
        (() => {
          const [head = "", tail] = address.split("::");
          const left = head === "" ? [] : head.split(":");
          const right = tail === undefined || tail === "" ? [] : tail.split(":");
          const groups = [...left, ...Array(8 - left.length - right.length).fill("0"), ...right];
          return groups.flatMap((group: string) => {
            const value = Number.parseInt(group, 16);
            return [value >> 8, value & 0xff];
          });
        })(),
      );

export interface SelfSignedCertificate {
  readonly certPem: string;
  readonly keyPem: string;
}

/** A self-signed serving certificate for `names` (DNS names or IP addresses; the first is the subject). */
export const selfSignedCertificate = (
  names: ReadonlyArray<string>,
  now: Date = new Date(),
): SelfSignedCertificate => {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const spki = publicKey.export({ type: "spki", format: "der" });
  const ecdsaWithSha256 = sequence(oid("1.2.840.10045.4.3.2"));
  const subject = sequence(set(sequence(oid("2.5.4.3"), utf8String(names[0] ?? "opstask"))));
  const alternativeNames = names.map((name) =>
    isIP(name) === 0 ? tlv(0x82, Buffer.from(name, "ascii")) : tlv(0x87, ipBytes(name)),
  );
  const extensions = sequence(
    // basicConstraints: not a CA (critical).
    sequence(oid("2.5.29.19"), tlv(0x01, Buffer.from([0xff])), octetString(sequence())),
    // keyUsage: digitalSignature (critical).
    sequence(
      oid("2.5.29.15"),
      tlv(0x01, Buffer.from([0xff])),
      octetString(tlv(0x03, Buffer.from([7, 0x80]))),
    ),
    // extKeyUsage: serverAuth.
    sequence(oid("2.5.29.37"), octetString(sequence(oid("1.3.6.1.5.5.7.3.1")))),
    sequence(oid("2.5.29.17"), octetString(sequence(...alternativeNames))),
  );
  const serial = randomBytes(16);
  serial[0] = ((serial[0] ?? 0) & 0x7f) | 0x01; // positive and without a leading zero byte
  const notBefore = new Date(now.getTime() - 5 * 60_000); // clock skew between scraper and pod
  const notAfter = new Date(now.getTime() + 365 * 86_400_000);
  const tbs = sequence(
    explicit(0, tlv(0x02, Buffer.from([2]))),
    tlv(0x02, serial),
    ecdsaWithSha256,
    subject,
    sequence(time(notBefore), time(notAfter)),
    subject,
    spki,
    explicit(3, extensions),
  );
  const der = sequence(tbs, ecdsaWithSha256, bitString(sign("sha256", tbs, privateKey)));
  const body = der.toString("base64").replace(/.{64}/g, "$&\n").replace(/\n$/, "");
  return {
    certPem: `-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----\n`,
    keyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
  };
};
