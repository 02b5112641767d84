/**
 * TLS material for etcd's client endpoint when `Etcd.spec.etcd.clientUrlTls` is set. Druid's etcd then
 * serves https with `client-cert-auth`, so a call needs both:
 *
 * - the CA: Secret `clientUrlTls.tlsCASecretRef.name`, key `dataKey` (default `bundle.crt`), the same
 *   secret druid mounts into the etcd container as its trusted CA; PEM blocks that do not parse are
 *   skipped (as for the backup-restore CA, docs/contract.md §10);
 * - a client certificate: Secret `clientUrlTls.clientTLSSecretRef.name`, keys `tls.crt` and `tls.key`
 *   (the certificate druid gives etcd-backup-restore to talk to etcd).
 *
 * Both secrets are read in the Etcd's namespace (druid mounts them into its pods; a reference's own
 * `namespace` cannot apply). A missing reference, secret or key is final; any other read error retries.
 */
import * as Effect from "effect/Effect";
import { DefaultCADataKey, type Etcd, type TLSConfig } from "../api/etcd.ts";
import type { EtcdClientTls } from "../etcd-client.ts";
import type { Secret } from "../objects.ts";
import { parsePemCertificates } from "../on-demand-snapshot/ca-resolution.ts";
import { ObjectReader, type ReadError } from "../services.ts";
import { ErrorCodes, failed, retry, type StepFailure } from "./step-failure.ts";

/** The keys of the client certificate secret (a `kubernetes.io/tls` secret). */
export const ClientCertificateKeys = { cert: "tls.crt", key: "tls.key" } as const;

export const ClientTlsTexts = {
  caSecretFailed: "Failed to get etcd client CA secret",
  caDataKeyNotFound: "CA cert data key not found in secret",
  appendCACerts: "Failed to append CA certs from secret",
  clientSecretFailed: "Failed to get etcd client TLS secret",
} as const;

const objectKey = (etcd: Etcd): string => `${etcd.metadata.namespace}/${etcd.metadata.name}`;

/** A data value by key; own keys only, so a key such as `constructor` never finds the prototype's. */
const dataOf = (secret: Secret, key: string): string | undefined =>
  secret.data !== undefined && Object.hasOwn(secret.data, key)
    ? Buffer.from(secret.data[key] ?? new Uint8Array()).toString("utf8")
    : undefined;

const readSecret = (
  etcd: Etcd,
  name: string,
  onFailure: (error: ReadError) => StepFailure,
): Effect.Effect<Secret, StepFailure, ObjectReader> =>
  ObjectReader.use((reader) => reader.getSecret(etcd.metadata.namespace, name)).pipe(
    Effect.mapError(onFailure),
  );

const caBundle = (etcd: Etcd, tls: TLSConfig): Effect.Effect<string, StepFailure, ObjectReader> =>
  Effect.gen(function* () {
    const namespace = etcd.metadata.namespace;
    const name = tls.tlsCASecretRef?.name ?? "";
    if (name === "") {
      return yield* failed(
        ClientTlsTexts.caSecretFailed,
        ErrorCodes.getCASecret,
        "etcd client CA secret is not referenced",
        `spec.etcd.clientUrlTls.tlsCASecretRef.name is not set on etcd ${objectKey(etcd)}`,
      );
    }
    const secret = yield* readSecret(etcd, name, (error) =>
      (error.reason === "NotFound" ? failed : retry)(
        ClientTlsTexts.caSecretFailed,
        ErrorCodes.getCASecret,
        `failed to get etcd client CA secret ${namespace}/${name}`,
        error.message,
      ),
    );
    const dataKey = tls.tlsCASecretRef?.dataKey ?? DefaultCADataKey;
    const data = dataOf(secret, dataKey);
    if (data === undefined) {
      return yield* failed(
        ClientTlsTexts.caDataKeyNotFound,
        ErrorCodes.caDataKeyNotFound,
        "CA cert data key not found in secret",
        `CA cert data key "${dataKey}" not found in secret ${namespace}/${name}`,
      );
    }
    const certificates = parsePemCertificates(data);
    if (certificates.length === 0) {
      return yield* failed(
        ClientTlsTexts.appendCACerts,
        ErrorCodes.appendCACerts,
        "failed to append CA certs from secret",
        `failed to append CA certs from secret ${namespace}/${name}`,
      );
    }
    return certificates.join("");
  });

const clientCertificate = (
  etcd: Etcd,
  tls: TLSConfig,
): Effect.Effect<{ readonly cert: string; readonly key: string }, StepFailure, ObjectReader> =>
  Effect.gen(function* () {
    const namespace = etcd.metadata.namespace;
    const name = tls.clientTLSSecretRef?.name ?? "";
    const message = `failed to get etcd client TLS secret ${namespace}/${name}`;
    if (name === "") {
      return yield* failed(
        ClientTlsTexts.clientSecretFailed,
        ErrorCodes.getClientTLSSecret,
        "etcd client TLS secret is not referenced",
        `spec.etcd.clientUrlTls.clientTLSSecretRef.name is not set on etcd ${objectKey(etcd)}`,
      );
    }
    const secret = yield* readSecret(etcd, name, (error) =>
      (error.reason === "NotFound" ? failed : retry)(
        ClientTlsTexts.clientSecretFailed,
        ErrorCodes.getClientTLSSecret,
        message,
        error.message,
      ),
    );
    const cert = dataOf(secret, ClientCertificateKeys.cert);
    const key = dataOf(secret, ClientCertificateKeys.key);
    if (cert === undefined || key === undefined) {
      const missing = cert === undefined ? ClientCertificateKeys.cert : ClientCertificateKeys.key;
      return yield* failed(
        ClientTlsTexts.clientSecretFailed,
        ErrorCodes.getClientTLSSecret,
        message,
        `data key "${missing}" not found in secret ${namespace}/${name}`,
      );
    }
    return { cert, key };
  });

/** The CA and client certificate for calls to the Etcd's client endpoint (and its members). */
export const resolveEtcdClientTls = (
  etcd: Etcd,
  tls: TLSConfig,
): Effect.Effect<EtcdClientTls, StepFailure, ObjectReader> =>
  Effect.gen(function* () {
    const ca = yield* caBundle(etcd, tls);
    const { cert, key } = yield* clientCertificate(etcd, tls);
    return { ca, cert, key };
  });
