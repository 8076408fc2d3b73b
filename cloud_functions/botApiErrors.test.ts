/**
 * callBotApi takes each Bot API answer as daemon/telegram/client.py does (and deliver acts on its
 * outcome as daemon/telegram/sender.py does): both run contracts/bot_api_errors.json
 * (tests/contracts/test_bot_api_errors.py is the Python side). The answers come over real HTTP from 127.0.0.1.
 */
import http, { type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type BotReply, callBotApi, type TelegramConfig } from "./lib/telegram";
import { contract } from "./test.contracts";

type Case = { name: string; status: number | null; body?: unknown; verdict: string; after_ms?: number };
const cases = contract<{ cases: Case[] }>("bot_api_errors.json").cases;

let answer: Case = cases[0]!;
let server: Server;
let base = "";

beforeAll(async () => {
  server = http.createServer((req, res) => {
    req.on("data", () => {});
    req.on("end", () => {
      res.writeHead(answer.status ?? 500, { "Content-Type": "application/json" });
      res.end(typeof answer.body === "string" ? answer.body : JSON.stringify(answer.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

/** A port nothing listens on: one that was just let go. */
async function closedBase(): Promise<string> {
  const gone = http.createServer(() => {});
  await new Promise<void>((resolve) => gone.listen(0, "127.0.0.1", resolve));
  const { port } = gone.address() as AddressInfo;
  await new Promise((resolve) => gone.close(resolve));
  return `http://127.0.0.1:${port}`;
}

/** The verdict deliver (telegram.ts) acts on: rejected is given up. */
function verdict(reply: BotReply): [string, number | undefined] {
  if (reply.outcome === "retry") return ["retry", reply.afterMs];
  return [reply.outcome === "rejected" ? "give_up" : reply.outcome === "auth" ? "hold" : reply.outcome, undefined];
}

describe("Bot API answers (contracts/bot_api_errors.json)", () => {
  test("the contract covers every verdict", () => {
    expect(new Set(cases.map((c) => c.verdict))).toEqual(new Set(["ok", "retry", "transient", "hold", "give_up"]));
  });
  test.each(cases.map((c) => [c.name, c] as const))("%s", async (_, c) => {
    answer = c;
    const config: TelegramConfig = {
      token: "7000001:AAF-fake_SECRET-0123456789abcdefXYZ",
      chatId: "-100",
      apiBase: c.status === null ? await closedBase() : base,
      quietHours: null,
      timeZone: "UTC",
    };
    const reply = await callBotApi(config, "sendMessage", { chat_id: "-100", text: "hello" });
    expect(verdict(reply)).toEqual([c.verdict, c.after_ms]);
  });
});
