/**
 * lib/buttonPresses.ts reads a button's callback data, and decides who may press it, as
 * daemon/telegram/callbacks.py does: both run contracts/button_presses.json (tests/contracts/test_button_presses.py
 * is the Python side). The press mutation (telegram.ts) asks it: a stranger's press decides nothing.
 */
import { describe, expect, test } from "vitest";
import { api, internal } from "./_generated/api";
import { MUTE_MS, SNOOZE_MS } from "./lib/alertText";
import { type ButtonAction, NOT_A_REVIEWER, parseButton, REVIEWERS_ONLY, reviewerRefusal } from "./lib/buttonPresses";
import { backend, registerSite } from "./test.setup";
import { contract } from "./test.contracts";

type Presses = {
  actions: Record<string, { action: string; reviewers_only: boolean; hold_ms?: number }>;
  not_a_reviewer: string;
  cases: { data: string; action: string | null; target?: string }[];
};

const presses = contract<Presses>("button_presses.json");

describe("button presses (contracts/button_presses.json)", () => {
  test.each(presses.cases.map((c) => [JSON.stringify(c.data), c] as const))("%s", (_, c) => {
    const parsed = parseButton(c.data);
    const asked = parsed === null ? null : { action: presses.actions[parsed.action]?.action, target: parsed.target };
    expect(asked).toEqual(c.action === null ? null : { action: c.action, target: c.target });
  });

  test("snooze and mute hold an alert as long as on the hub", () => {
    expect({ s: SNOOZE_MS, m: MUTE_MS }).toEqual({ s: presses.actions.s?.hold_ms, m: presses.actions.m?.hold_ms });
  });

  test("a press by someone not among the reviewers is refused in the hub's words", () => {
    expect(NOT_A_REVIEWER).toBe(presses.not_a_reviewer);
  });

  test("the actions only reviewers may take are the contract's", () => {
    const only = Object.entries(presses.actions).filter(([, a]) => a.reviewers_only).map(([code]) => code);
    expect([...REVIEWERS_ONLY].sort()).toEqual(only.sort());
  });

  test.each(Object.entries(presses.actions))("%s: only reviewers, if the contract says so", (code, action) => {
    const press = code as ButtonAction;
    expect(parseButton(`${code}:k1`)?.action).toBe(press);
    expect(reviewerRefusal(press, "42", ["7"])).toBe(action.reviewers_only ? presses.not_a_reviewer : null);
    expect(reviewerRefusal(press, "42", ["7", "42"])).toBeNull();
    expect(reviewerRefusal(press, "42", [])).toBe(action.reviewers_only ? presses.not_a_reviewer : null);
  });
});

test("a stranger's approve, reject and defer through the press mutation decide nothing; a reviewer's does", async () => {
  const t = backend();
  const laptop = await registerSite(t, "laptop");
  const { approvalId } = await t.mutation(api.approvals.create, {
    ...laptop,
    agentName: "claude",
    actionType: "deploy",
    priority: "normal",
    reviewers: ["42"],
    expiresAt: Date.now() + 3_600_000,
  });
  const before = await t.run((ctx) => ctx.db.get(approvalId));
  const press = (fromId: string, code: string, updateId: number) =>
    t.mutation(internal.telegram.press, { callbackId: `cb${updateId}`, fromId, fromName: "Ann", data: `${code}:${approvalId}`, updateId });

  for (const [i, code] of ["a", "r", "d"].entries()) expect(await press("7", code, i)).toEqual({ answer: presses.not_a_reviewer });
  expect(await t.run((ctx) => ctx.db.get(approvalId))).toEqual(before); // still pending, never deferred
  expect(await press("42", "a", 9)).toEqual({ answer: "Approved." });
  expect(await t.run((ctx) => ctx.db.get(approvalId))).toMatchObject({ status: "approved", resolvedBy: "Ann" });
});

test("a collaborator with `approve` decides through the press mutation; one without it, or a group's id, does not", async () => {
  const t = backend();
  const laptop = await registerSite(t, "laptop");
  await t.mutation(internal.collaborators.replace, {
    collaborators: [
      { name: "ada", role: "lead", telegramChatId: "111", permissions: ["approve"], notifyOn: ["approvals"] },
      { name: "cy", role: "ops", telegramChatId: "333", permissions: [], notifyOn: ["alerts"] },
      { name: "team", role: "group", telegramChatId: "-100444", permissions: ["approve"], notifyOn: [] },
    ],
  });
  const { approvalId } = await t.mutation(api.approvals.create, {
    ...laptop,
    agentName: "claude",
    actionType: "deploy",
    priority: "normal",
    reviewers: ["42"],
    expiresAt: Date.now() + 3_600_000,
  });
  const press = (fromId: string, updateId: number) =>
    t.mutation(internal.telegram.press, { callbackId: `cb${updateId}`, fromId, fromName: fromId, data: `a:${approvalId}`, updateId });
  expect(await press("333", 1)).toEqual({ answer: presses.not_a_reviewer });
  expect(await press("-100444", 2)).toEqual({ answer: presses.not_a_reviewer });
  expect(await t.run((ctx) => ctx.db.get(approvalId))).toMatchObject({ status: "pending" });
  expect(await press("111", 3)).toEqual({ answer: "Approved." });
  expect(await t.run((ctx) => ctx.db.get(approvalId))).toMatchObject({ status: "approved", resolvedBy: "111" });
});

test("collaborators:replace stores exactly the list pushed, and refuses a wrong entry in the hub's words, writing nothing", async () => {
  const t = backend();
  const ada = { name: "ada", role: "lead", telegramChatId: "111", permissions: ["approve"], notifyOn: ["offline", "digest"] };
  const bob = { name: "bob", role: "", telegramChatId: "-100222", telegramUserId: "222", permissions: [], notifyOn: ["approvals"] };
  expect(await t.mutation(internal.collaborators.replace, { collaborators: [ada, bob] })).toEqual({ stored: 2, removed: [] });
  expect(await t.mutation(internal.collaborators.replace, { collaborators: [bob] })).toEqual({ stored: 1, removed: ["ada"] });
  expect(await t.query(internal.collaborators.list, {})).toEqual([bob]);
  await expect(t.mutation(internal.collaborators.replace, { collaborators: [{ ...ada, notifyOn: ["ofline"] }] })).rejects.toThrow(
    "ada: notify_on has no name 'ofline' (names: alerts, silent,",
  );
  await expect(t.mutation(internal.collaborators.replace, { collaborators: [{ ...ada, permissions: ["admin"] }] })).rejects.toThrow(
    "ada: permissions has no name 'admin' (names: approve)",
  );
  await expect(t.mutation(internal.collaborators.replace, { collaborators: [ada, ada] })).rejects.toThrow("'ada' is listed twice");
  expect(await t.query(internal.collaborators.list, {})).toEqual([bob]);
});
