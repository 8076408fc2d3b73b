/** Helpers shared by the tests. */
import { expect } from "vitest";
import { internal } from "./_generated/api";
import type { Backend } from "./test.modules";

export { backend, modules, type Backend } from "./test.modules";


/** Registers a site the way an admin would and returns what a client needs. */
export async function registerSite(t: Backend, name: string): Promise<{ site: string; secret: string }> {
  return await t.mutation(internal.sites.register, { name });
}

/** The ConvexError code a call failed with (fails the test if it succeeded). */
export async function errorCode(call: Promise<unknown>): Promise<string> {
  const error: unknown = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, "the call should have failed").toBeDefined();
  return (error as { data?: { code?: string } }).data?.code ?? `not a ConvexError: ${String(error)}`;
}

/** The message of a call's failure (for validator errors, which carry no code). */
export async function errorMessage(call: Promise<unknown>): Promise<string> {
  const error: unknown = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, "the call should have failed").toBeDefined();
  return String((error as Error).message ?? error);
}
