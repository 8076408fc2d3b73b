/**
 * The deployment's HTTP routes: POST /telegram, the bot's webhook (setWebhook with
 * `secret_token` = TELEGRAM_WEBHOOK_SECRET). Button presses arrive here, from the one place every
 * site shares, so that a fleet of sites needs no poller (a bot allows only one).
 */
import { httpRouter } from "convex/server";
import { internal } from "./_generated/api";
import { httpAction } from "./_generated/server";
import { sameText } from "./lib/auth";
import { callBotApi, telegramConfig, webhookSecret } from "./lib/telegram";

type CallbackQuery = {
  id?: unknown;
  data?: unknown;
  from?: { id?: unknown; first_name?: unknown; last_name?: unknown; username?: unknown };
  message?: { chat?: { id?: unknown } };
};

const text = (value: unknown) => (typeof value === "string" ? value : "");

/** "Ada Lovelace", or the username, or the id: how the approval will say who answered. */
function nameOf(from: NonNullable<CallbackQuery["from"]>, id: string): string {
  const full = [text(from.first_name), text(from.last_name)].filter(Boolean).join(" ");
  return full || text(from.username) || id;
}

const reply = (status: number) => new Response(null, { status });

const telegramWebhook = httpAction(async (ctx, request) => {
  const secret = webhookSecret();
  const given = request.headers.get("X-Telegram-Bot-Api-Secret-Token") ?? "";
  if (secret === "" || !sameText(given, secret)) return reply(401);
  let update: { update_id?: unknown; callback_query?: CallbackQuery };
  try {
    update = (await request.json()) as typeof update;
  } catch {
    return reply(400);
  }
  if (typeof update !== "object" || update === null || Array.isArray(update)) return reply(400);
  const query = update.callback_query;
  // Anything but a button press (messages, edits, joins): nothing to do, and 200 stops the retries.
  if (typeof query !== "object" || query === null || typeof update.update_id !== "number") return reply(200);
  const callbackId = text(query.id);
  const data = text(query.data);
  const fromId = query.from?.id;
  // A press of no data, or of data we do not know, is answered all the same (telegram.ts's UNKNOWN_BUTTON).
  if (callbackId === "" || (typeof fromId !== "number" && typeof fromId !== "string")) return reply(200);
  const config = telegramConfig();
  // The chat it was pressed in: press refuses one that is not ours (the default chat, a collaborator's).
  const chatId = query.message?.chat?.id;
  const { answer } = await ctx.runMutation(internal.telegram.press, {
    callbackId,
    fromId: String(fromId),
    fromName: nameOf(query.from ?? {}, String(fromId)),
    data,
    updateId: update.update_id,
    ...(typeof chatId === "number" || typeof chatId === "string" ? { chatId: String(chatId) } : {}),
  });
  if (config !== null) {
    // Best effort: the press is done whatever happens to its toast (and callBotApi never throws).
    await callBotApi(config, "answerCallbackQuery", { callback_query_id: callbackId, text: answer });
  }
  return reply(200);
});

const http = httpRouter();
http.route({ path: "/telegram", method: "POST", handler: telegramWebhook });
export default http;
