/**
 * The seed design's documents (tests/data/seed/, README there), written straight into the tables
 * as the seed's own functions left them: for the vitest tests and for the local server
 * (tests/convex_local, POST /_local/seed). Each insert is validated against memsync's schema.
 */
import { readFileSync } from "node:fs";
import type { GenericId } from "convex/values";
import type { MutationCtx } from "./_generated/server";

function seedFile<T>(name: string): T {
  return JSON.parse(readFileSync(new URL(`../tests/data/seed/${name}.json`, import.meta.url), "utf8")) as T;
}

type Row = Record<string, unknown>;

export type SeedFixtures = {
  episodes: Row[];
  approvals: Row[];
  tasks: (Row & { approval?: number })[];
  agents: Row[];
  syncCursors: Row[];
  collaborators: Row[];
};

export function seedFixtures(): SeedFixtures {
  return {
    episodes: seedFile("episodes"),
    approvals: seedFile("approvals"),
    tasks: seedFile("tasks"),
    agents: seedFile("agents"),
    syncCursors: seedFile("syncCursors"),
    collaborators: seedFile("collaborators"),
  };
}

/** Inserts every seed document; a task's `approval` (an index into approvals.json) becomes its approvalId. */
export async function insertSeed(db: MutationCtx["db"], seed: SeedFixtures = seedFixtures()): Promise<Record<string, number>> {
  const insert = db.insert as (table: string, doc: Row) => Promise<GenericId<string>>;
  const approvalIds: GenericId<string>[] = [];
  for (const approval of seed.approvals) approvalIds.push(await insert("approvals", approval));
  for (const { approval, ...task } of seed.tasks) {
    await insert("tasks", approval === undefined ? task : { ...task, approvalId: approvalIds[approval] });
  }
  for (const table of ["episodes", "agents", "syncCursors", "collaborators"] as const) {
    for (const doc of seed[table]) await insert(table, doc);
  }
  return Object.fromEntries(Object.entries(seed).map(([table, docs]) => [table, docs.length]));
}
