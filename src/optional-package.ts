/**
 * Packages only some CLI features use (`opstask machine --format svg`, `--inspect`) are optional peer
 * dependencies: a library user does not install them. When one is missing, the feature stops with
 * what to install instead of a bare ERR_MODULE_NOT_FOUND.
 */
const isModuleNotFound = (cause: unknown): boolean =>
  typeof cause === "object" && cause !== null && Reflect.get(cause, "code") === "ERR_MODULE_NOT_FOUND";

/** Loads an optional package; rejects with an Error naming the package and the feature when absent. */
export const importOptional = <M>(name: string, feature: string, load: () => Promise<M>): Promise<M> =>
  load().catch((cause: unknown) =>
    Promise.reject(
      isModuleNotFound(cause)
        ? new Error(`${feature} needs the optional package ${name}: npm install ${name}`, { cause })
        : cause,
    ),
  );
