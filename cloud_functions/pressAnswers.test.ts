/**
 * What a presser sees after a button press (contracts/press_answers.json), word for word: each case
 * pressed through POST /telegram (http.ts, telegram.ts's press), as tests/contracts/test_press_answers.py
 * presses it through the hub's apply.
 */
import { describe, expect, test, vi } from "vitest";
import { api, internal } from "./_generated/api";
import { machineId } from "./lib/alertStore";
import { CHAT, useTelegramBackend, WEBHOOK_SECRET } from "./test.botApi";
import { contract } from "./test.contracts";

type Pressed = { action?: string; data?: string; target?: "approval" | "alert" | "unknown"; by?: "reviewer" | "stranger"; chat?: "own" | "other"; at_min?: number };
type Case = { name: string; expires_in_min: number; presses: Pressed[]; answers: string[] };
const ANSWERS = contract<{ now: number; cases: Case[] }>("press_answers.json");
const NOW = ANSWERS.now;
const MINUTE = 60_000;
const REVIEWER = 42;
const STRANGER = 7;
const tg = useTelegramBackend(NOW, ["laptop"]);

describe("the presser sees the contract's words", () => {
  test.each(ANSWERS.cases.map((c) => [c.name, c] as const))("%s", async (_name, c) => {
    const { approvalId } = await tg.t.mutation(api.approvals.create, {
      ...tg.laptop,
      agentName: "claude",
      actionType: "deploy",
      priority: "normal",
      reviewers: [String(REVIEWER)],
      expiresAt: NOW + c.expires_in_min * MINUTE,
      summary: "ship it",
    });
    await tg.t.run((ctx) => ctx.db.insert("healthStates", { site: "laptop", state: "down", since: NOW }));
    await tg.t.mutation(internal.alerts.sweep, {});
    await tg.settle();
    const targets = { approval: String(approvalId), alert: await machineId("silent:laptop"), unknown: null };
    const seen: unknown[] = [];
    for (const [i, pressed] of c.presses.entries()) {
      vi.setSystemTime(NOW + (pressed.at_min ?? 0) * MINUTE);
      const approvalPress = "ard".includes(pressed.action ?? "a");
      const target = targets[pressed.target ?? (approvalPress ? "approval" : "alert")] ?? (approvalPress ? "999999" : "0000000000000000");
      const before = tg.bot.of("answerCallbackQuery").length;
      const response = await tg.t.fetch("/telegram", {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET },
        body: JSON.stringify({
          update_id: 1000 + i,
          callback_query: {
            id: `cb${i}`,
            from: { id: pressed.by === "stranger" ? STRANGER : REVIEWER, first_name: "Ann" },
            message: { message_id: 1, chat: { id: pressed.chat === "other" ? 5 : Number(CHAT) } },
            data: pressed.data ?? `${pressed.action}:${target}`,
          },
        }),
      });
      await tg.settle();
      expect(response.status).toBe(200);
      const answers = tg.bot.of("answerCallbackQuery");
      seen.push(answers.length > before ? answers[answers.length - 1].text : undefined);
    }
    expect(seen).toEqual(c.answers.map((answer) => answer.replaceAll("{approval}", String(approvalId))));
  });
});
