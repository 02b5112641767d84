/**
 * Who may read /metrics in secure mode, decided by the kube-apiserver as controller-runtime's
 * `filters.WithAuthenticationAndAuthorization` does: a TokenReview of the bearer token, then a
 * SubjectAccessReview of `get` on the non-resource URL `/metrics` (its RBAC:
 * deploy/clusterrole-metrics-auth.yaml).
 * Decisions are cached by a hash of the token (allowed 60 s, refused 10 s, at most 1,024; API failures
 * not cached), and at most `maxInFlight` reviews run at once, further requests answered 429 without
 * asking. Why these figures: docs/design-notes.md §17.
 */
import { createHash } from "node:crypto";
import * as Duration from "effect/Duration";
import * as Effect from "effect/Effect";
import * as Predicate from "effect/Predicate";
import { kubeRequest, type RequestSettings } from "../kube/client.ts";
import type { KubeError } from "../kube/errors.ts";
import type { KubeClient } from "../kube/kube-client.ts";
import { RequestCounter } from "../kube/request-metrics.ts";

/** What to do with a request for /metrics. */
export type MetricsAccess =
  | { readonly _tag: "Allowed"; readonly user: string }
  /** No token, or one the apiserver does not accept: 401. */
  | { readonly _tag: "Unauthenticated"; readonly reason: string }
  /** A valid token whose user may not `get /metrics`: 403. */
  | { readonly _tag: "Forbidden"; readonly user: string }
  /** The apiserver could not be asked: 500, and the scrape is retried by the scraper. */
  | { readonly _tag: "Unavailable"; readonly reason: string }
  /** Too many reviews in flight (a flood of unknown tokens): 429 without asking the apiserver. */
  | { readonly _tag: "Busy" };

export interface MetricsAccessOptions {
  readonly client: KubeClient;
  readonly counter?: RequestCounter;
  /** The URL path the SubjectAccessReview asks about; default `/metrics`. */
  readonly path?: string;
  readonly allowedTtlMs?: number;
  readonly deniedTtlMs?: number;
  readonly maxEntries?: number;
  /** Reviews at once; beyond, requests are answered 429 at once. Default 8. */
  readonly maxInFlight?: number;
  readonly now?: () => number;
}

interface UserInfo {
  readonly username: string;
  readonly uid?: string;
  readonly groups?: ReadonlyArray<string>;
  readonly extra?: Readonly<Record<string, ReadonlyArray<string>>>;
}

const userOf = (status: unknown): UserInfo | undefined => {
  if (!Predicate.isObject(status) || !Predicate.isObject(Reflect.get(status, "user"))) return undefined;
  const user = Reflect.get(status, "user") as Record<string, unknown>;
  return typeof user.username === "string" ? (user as unknown as UserInfo) : undefined;
};

const statusOf = (body: unknown): unknown =>
  Predicate.isObject(body) ? Reflect.get(body, "status") : undefined;

/** `Authorization: Bearer <token>` → the token. */
export const bearerToken = (authorization: string | undefined): string | undefined => {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "");
  return match?.[1];
};

export interface MetricsAccessChecker {
  readonly check: (authorization: string | undefined) => Promise<MetricsAccess>;
}

export const makeMetricsAccess = (options: MetricsAccessOptions): MetricsAccessChecker => {
  const settings: RequestSettings = {
    counter: options.counter ?? new RequestCounter(),
    timeout: Duration.seconds(10),
  };
  const path = options.path ?? "/metrics";
  const allowedTtlMs = options.allowedTtlMs ?? 60_000;
  const deniedTtlMs = options.deniedTtlMs ?? 10_000;
  const maxEntries = options.maxEntries ?? 1_024;
  const now = options.now ?? Date.now;
  const maxInFlight = options.maxInFlight ?? 8;
  let inFlight = 0;
  const cache = new Map<string, { readonly until: number; readonly access: MetricsAccess }>();

  const post = (resource: string, body: unknown): Effect.Effect<unknown, KubeError> =>
    kubeRequest(settings, "create", options.client, { method: "POST", path: resource, body }).pipe(
      Effect.map((response) => statusOf(response.body)),
    );

  const decide = (token: string): Effect.Effect<MetricsAccess> =>
    Effect.gen(function* () {
      const review = yield* post("/apis/authentication.k8s.io/v1/tokenreviews", {
        apiVersion: "authentication.k8s.io/v1",
        kind: "TokenReview",
        spec: { token },
      });
      const user = userOf(review);
      if (!Predicate.isObject(review) || Reflect.get(review, "authenticated") !== true || user === undefined)
        return { _tag: "Unauthenticated", reason: "the token was not accepted" } as const;
      const access = yield* post("/apis/authorization.k8s.io/v1/subjectaccessreviews", {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SubjectAccessReview",
        spec: {
          user: user.username,
          ...(user.uid === undefined ? {} : { uid: user.uid }),
          ...(user.groups === undefined ? {} : { groups: user.groups }),
          ...(user.extra === undefined ? {} : { extra: user.extra }),
          nonResourceAttributes: { path, verb: "get" },
        },
      });
      return Predicate.isObject(access) && Reflect.get(access, "allowed") === true
        ? ({ _tag: "Allowed", user: user.username } as const)
        : ({ _tag: "Forbidden", user: user.username } as const);
    }).pipe(
      Effect.catch((error: KubeError) =>
        Effect.succeed({ _tag: "Unavailable", reason: error.message } as const satisfies MetricsAccess),
      ),
    );

  const remember = (key: string, access: MetricsAccess): void => {
    if (access._tag === "Unavailable" || access._tag === "Busy") return;
    cache.delete(key);
    cache.set(key, { until: now() + (access._tag === "Allowed" ? allowedTtlMs : deniedTtlMs), access });
    const oldest = cache.keys().next();
    if (cache.size > maxEntries && !oldest.done) cache.delete(oldest.value);
  };

  return {
    check: async (authorization) => {
      const token = bearerToken(authorization);
      if (token === undefined) return { _tag: "Unauthenticated", reason: "no bearer token" };
      const key = createHash("sha256").update(token).digest("base64url");
      const cached = cache.get(key);
      if (cached !== undefined && cached.until > now()) return cached.access;
      if (inFlight >= maxInFlight) return { _tag: "Busy" };
      inFlight += 1;
      try {
        const access = await Effect.runPromise(decide(token));
        remember(key, access);
        return access;
      } finally {
        inFlight -= 1;
      }
    },
  };
};
