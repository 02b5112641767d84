import { ApiException } from "@kubernetes/client-node";

/** How the apiserver answered a write that a test expects it may refuse: its code and body, or admitted. */
export const refusal = async (attempt: Promise<unknown>): Promise<{ code: number; message: string }> => {
  try {
    await attempt;
  } catch (error) {
    if (error instanceof ApiException) return { code: error.code, message: String(error.body) };
    throw error;
  }
  return { code: 0, message: "admitted" };
};
