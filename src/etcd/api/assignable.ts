/** Compile-time assertion: `Assignable<A, B>` only type-checks when `A` is assignable to `B`. */
export type Assignable<A extends B, B> = [A, B];
