/// <reference types="vite/client" />
/**
 * The real functions in convex-test's in-memory backend, for the vitest tests and for the local
 * HTTP server (tests/convex_local). No vitest import here: the server loads this without vitest.
 */
import { convexTest } from "convex-test";
import schema from "./schema";

/**
 * Every function module. The array form works on Vite 7 and 8 (the extglob in convex-test's docs
 * matches nothing on Vite 8); files with two dots (tests, helpers like this one) are left out,
 * as `convex deploy` leaves them out.
 */
export const modules = import.meta.glob(["./**/*.*s", "!./**/*.*.*s"]);

export function backend(options: { transactionLimits?: boolean | Record<string, number> } = {}) {
  return convexTest({ schema, modules, ...options });
}

export type Backend = ReturnType<typeof backend>;
