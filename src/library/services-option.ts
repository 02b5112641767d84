/**
 * Handlers get what they need (HTTP clients, object readers, fakes in tests) as Effect services `R`;
 * the caller hands them in as one Layer. The option is required exactly when the handlers need
 * services, so forgetting it is a type error rather than a "service not found" at the first call.
 */
import type * as Layer from "effect/Layer";

export type ServicesOption<R> = [R] extends [never]
  ? unknown
  : { readonly services: Layer.Layer<R, unknown> };
