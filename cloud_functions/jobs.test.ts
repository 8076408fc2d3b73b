import { beforeEach, expect, test } from "vitest";
import { api } from "./_generated/api";
import { backend, errorMessage, registerSite, type Backend } from "./test.setup";

let t: Backend;
let laptop: { site: string; secret: string };
let vm: { site: string; secret: string };
const slot = { job: "qdrant-episode-sync", slot: "2026-11-21T10:05" };

beforeEach(async () => {
  t = backend();
  laptop = await registerSite(t, "laptop");
  vm = await registerSite(t, "vm");
});

test("exactly one claimant per (job, slot), ever; a retry by the owner still says claimed", async () => {
  expect(await t.mutation(api.jobs.claimSlot, { ...laptop, ...slot })).toEqual({ claimed: true, claimant: "laptop" });
  expect(await t.mutation(api.jobs.claimSlot, { ...vm, ...slot })).toEqual({ claimed: false, claimant: "laptop" });
  expect(await t.mutation(api.jobs.claimSlot, { ...laptop, ...slot })).toEqual({ claimed: true, claimant: "laptop" });
  expect(await t.mutation(api.jobs.claimSlot, { ...vm, ...slot, slot: "2026-11-21T10:10" })).toEqual({ claimed: true, claimant: "vm" });
  expect(await t.run((ctx) => ctx.db.query("jobClaims").collect())).toHaveLength(2);
});

test("sites racing for one slot: one winner", async () => {
  const answers = await Promise.all([laptop, vm, laptop, vm].map((auth) => t.mutation(api.jobs.claimSlot, { ...auth, ...slot })));
  const owners = new Set(answers.map((answer) => answer.claimant));
  expect(owners.size).toBe(1);
  expect(await t.run((ctx) => ctx.db.query("jobClaims").collect())).toHaveLength(1);
});

test("the validator refuses a missing slot", async () => {
  expect(await errorMessage(t.mutation(api.jobs.claimSlot, { ...laptop, job: "j" } as never))).toMatch(/Missing required field `slot`/);
});
