/**
 * A YAML document read on demand: the yaml package is loaded only when a file is read, so a
 * controller configured by flags in a pod (in-cluster credentials) never holds it. A JSON document is
 * YAML too and is parsed without it: kubectl writes kubeconfigs as either.
 */
export const parseYamlText = async (text: string): Promise<unknown> => {
  if (text.trimStart().startsWith("{")) {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      // Not JSON after all: the YAML parser reads it (and names the line of a mistake).
    }
  }
  return (await import("yaml")).parse(text) as unknown;
};
