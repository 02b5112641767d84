/**
 * Strings in UTF-16 code-unit order: what `<` compares, the same on every machine and in every locale.
 *
 * Why not `localeCompare`: its first call loads ICU's collation data from the node binary, resident
 * memory that a controller keeps for the rest of its life, only to sort metric labels and
 * history keys, which need an order that is stable, not one a reader's language would choose.
 */
export const compareCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
