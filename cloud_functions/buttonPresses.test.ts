/**
 * telegram.ts reads a button's callback data as daemon/telegram/callbacks.py does: both run
 * contracts/button_presses.json (tests/test_button_presses.py is the Python side).
 */
import { describe, expect, test } from "vitest";
import { MUTE_MS, SNOOZE_MS } from "./lib/alertText";
import { NOT_A_REVIEWER, parseButton } from "./telegram";
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
});
