/**
 * The few DER encoders (ITU-T X.690) an X.509 certificate needs: node:crypto creates keys and signs
 * but cannot issue certificates, so the controller's self-signed metrics certificate
 * (self-signed-certificate.ts) and the tests' small PKI encode their certificates with these.
 */

const length = (n: number): Buffer => {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let rest = n; rest > 0; rest = Math.floor(rest / 256)) bytes.unshift(rest % 256);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
};

/** Tag, length, value. */
export const tlv = (tag: number, ...content: Buffer[]): Buffer => {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), length(body.length), body]);
};

export const sequence = (...items: Buffer[]) => tlv(0x30, ...items);
export const set = (...items: Buffer[]) => tlv(0x31, ...items);
export const octetString = (content: Buffer) => tlv(0x04, content);
export const bitString = (content: Buffer) => tlv(0x03, Buffer.from([0]), content);
export const boolean = (value: boolean) => tlv(0x01, Buffer.from([value ? 0xff : 0]));
export const utf8String = (text: string) => tlv(0x0c, Buffer.from(text, "utf8"));
/** A context-specific constructed tag, `[n] EXPLICIT`. */
export const explicit = (n: number, content: Buffer) => tlv(0xa0 | n, content);

/** A non-negative INTEGER from big-endian bytes (minimal, with a leading zero when the top bit is set). */
export const integer = (value: Buffer): Buffer => {
  let bytes = value;
  while (bytes.length > 1 && bytes[0] === 0 && ((bytes[1] ?? 0) & 0x80) === 0) bytes = bytes.subarray(1);
  return tlv(0x02, (bytes[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes);
};

export const oid = (dotted: string): Buffer => {
  const [first = 0, second = 0, ...rest] = dotted.split(".").map(Number);
  const bytes = [40 * first + second];
  for (const arc of rest) {
    const chunk = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) chunk.unshift(0x80 | (v & 0x7f));
    bytes.push(...chunk);
  }
  return tlv(0x06, Buffer.from(bytes));
};

/** UTCTime before 2050, GeneralizedTime from 2050 on (RFC 5280 §4.1.2.5). */
export const time = (date: Date): Buffer => {
  const digits = date.toISOString().replace(/[-:T]/g, "").slice(0, 14);
  return date.getUTCFullYear() < 2050
    ? tlv(0x17, Buffer.from(`${digits.slice(2)}Z`, "ascii"))
    : tlv(0x18, Buffer.from(`${digits}Z`, "ascii"));
};
