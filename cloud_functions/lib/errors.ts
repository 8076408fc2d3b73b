import { ConvexError } from "convex/values";

/**
 * The codes clients branch on. Production Convex redacts error messages ("Server Error"), but a
 * ConvexError's data reaches the client intact (HTTP API: `errorData`), so the code is the contract.
 */
export type ErrorCode =
  | "UNAUTHORIZED" // unknown site, wrong or missing secret, disabled site
  | "INVALID" // arguments that pass the validators but not our own checks
  | "TOO_LARGE" // a batch over its row limit
  | "CONFLICT" // the state forbids it: resolving a settled approval, registering a taken name
  | "NOT_FOUND" // an id that does not exist or belongs to another site (indistinguishable on purpose)
  | "NOT_ADOPTED"; // the key holds a seed design's document that `memsync adopt` has not brought to memsync's shape

export function fail(code: ErrorCode, message: string): never {
  throw new ConvexError({ code, message });
}
