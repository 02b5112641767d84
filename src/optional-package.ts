/**
 * Packages only some features use are optional peer dependencies, so a library user does not install
 * them: Graphviz (`opstask machine --format svg`), the Stately inspector and its relay (`--inspect`:
 * @statelyai/inspect, ws), client-node (the task CLI, `opstask dev`, and kubeconfigs with exec or
 * auth-provider credentials). A missing one stops the feature with what to install instead of a bare
 * ERR_MODULE_NOT_FOUND.
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

/**
 * The package an ERR_MODULE_NOT_FOUND names (`Cannot find package 'x' imported from …`), if any: the
 * error itself, or the one `importOptional` wrapped (its `cause`).
 */
export const missingPackage = (error: unknown): string | undefined => {
  const cause = isModuleNotFound(error)
    ? error
    : typeof error === "object" && error !== null
      ? Reflect.get(error, "cause")
      : undefined;
  if (!isModuleNotFound(cause)) return undefined;
  const message = Reflect.get(cause as object, "message");
  return typeof message === "string" ? /Cannot find package '([^']+)'/.exec(message)?.[1] : undefined;
};
