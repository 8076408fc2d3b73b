/**
 * The shared contracts (contracts/ at the repository root): the data files that the Python tests
 * and these tests both run, so that neither server's copy of a policy drifts from the other's.
 */
import { readFileSync } from "node:fs";

/** contracts/<name>, parsed; the caller names the shape it expects. */
export function contract<T>(name: string): T {
  return JSON.parse(readFileSync(new URL(`../contracts/${name}`, import.meta.url), "utf8")) as T;
}
