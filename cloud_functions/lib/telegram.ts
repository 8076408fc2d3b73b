/**
 * The Telegram Bot API as the deployment talks to it: its settings (the deployment's environment
 * variables) and one call. The bot token is part of every request's URL, so nothing here ever puts
 * a URL, a fetch error's text or a response body into an error, a row, a log line or a return value:
 * failures are told by method name, HTTP status and Telegram's own description (with the token cut
 * out should it ever appear there).
 */
import { type QuietHours, readQuietHours, zoneProblem } from "./quietHours";

// Convex gives every function the deployment's environment variables as process.env (no @types/node here).
declare const process: { env: Record<string, string | undefined> };

export const DEFAULT_API_BASE = "https://api.telegram.org";
/** Telegram refuses longer message texts. */
export const MAX_TEXT = 4096;

export type TelegramConfig = {
  token: string;
  chatId: string;
  apiBase: string;
  quietHours: QuietHours | null;
  timeZone: string;
};

type Env = Record<string, string | undefined>;

/** The bot's settings, or null when Telegram is not configured (no token or no chat): then nothing is sent. */
export function telegramConfig(env: Env = process.env): TelegramConfig | null {
  const token = env.TELEGRAM_BOT_TOKEN?.trim() ?? "";
  const chatId = env.TELEGRAM_CHAT_ID?.trim() ?? "";
  if (token === "" || chatId === "") return null;
  return {
    token,
    chatId,
    apiBase: (env.TELEGRAM_API_BASE?.trim() || DEFAULT_API_BASE).replace(/\/+$/, ""),
    ...quietSettings(env),
  };
}

/**
 * TELEGRAM_QUIET_HOURS and TELEGRAM_TIMEZONE. The hub refuses a bad window or zone when it reads
 * its settings; a deployment cannot refuse its environment, and a typo must not stop alerts, so a
 * bad one is said in the deployment's log, in the hub's words, each time it is read, and left out
 * (no quiet hours; UTC) until someone fixes it.
 */
function quietSettings(env: Env): { quietHours: QuietHours | null; timeZone: string } {
  const window = env.TELEGRAM_QUIET_HOURS?.trim() ?? "";
  const read = window === "" ? null : readQuietHours(env.TELEGRAM_QUIET_HOURS!);
  if (read !== null && "problem" in read) console.error(`TELEGRAM_QUIET_HOURS: ${read.problem}; warnings go out at once until it is fixed`);
  const zone = env.TELEGRAM_TIMEZONE?.trim() || "UTC";
  const problem = zoneProblem(zone);
  if (problem !== null) console.error(`TELEGRAM_TIMEZONE: ${problem}; quiet hours are read in UTC until it is fixed`);
  return { quietHours: read !== null && "problem" in read ? null : read, timeZone: problem === null ? zone : "UTC" };
}

/** The secret Telegram sends back in X-Telegram-Bot-Api-Secret-Token (setWebhook's secret_token); "" = none. */
export function webhookSecret(env: Env = process.env): string {
  return env.TELEGRAM_WEBHOOK_SECRET ?? "";
}

export type Button = { text: string; data: string };

export type BotReply =
  | { outcome: "ok"; result: unknown }
  | { outcome: "retry"; afterMs: number; error: string } // 429: Telegram says when
  | { outcome: "transient"; error: string } // 408, 429 or 5xx not saying when, or no answer: try again later
  | { outcome: "auth"; error: string } // 401 or 404: the token is refused; send nothing until it is fixed
  | { outcome: "rejected"; error: string; description: string }; // another 4xx: trying again will not help

/** Telegram's inline keyboard from our rows of buttons (an empty one removes the keyboard). */
export function keyboard(buttons: Button[][] | undefined) {
  return { inline_keyboard: (buttons ?? []).map((row) => row.map((b) => ({ text: b.text, callback_data: b.data }))) };
}

export function clip(text: string): string {
  return text.length <= MAX_TEXT ? text : `${text.slice(0, MAX_TEXT - 1)}…`;
}

/** `POST {base}/bot{token}/{method}` with a JSON body; never throws. */
export async function callBotApi(config: TelegramConfig, method: string, body: Record<string, unknown>): Promise<BotReply> {
  let response: Response;
  try {
    response = await fetch(`${config.apiBase}/bot${config.token}/${method}`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
  } catch {
    // A fetch error's text may quote the URL, and with it the token.
    return { outcome: "transient", error: `telegram ${method}: no answer` };
  }
  let reply: { ok?: boolean; result?: unknown; description?: unknown; parameters?: { retry_after?: unknown } } = {};
  try {
    reply = (await response.json()) as typeof reply;
  } catch {
    // Not JSON (a proxy's error page): the status tells enough.
  }
  if (response.ok && reply.ok === true) return { outcome: "ok", result: reply.result };
  const description = typeof reply.description === "string" ? reply.description.split(config.token).join("<token>").slice(0, 200) : "";
  const error = `telegram ${method}: HTTP ${response.status}${description ? ` (${description})` : ""}`;
  // How each answer is taken: contracts/bot_api_errors.json, as daemon/telegram/client.py takes it.
  if (response.status === 408 || response.status === 429 || response.status >= 500 || response.ok) {
    const seconds = reply.parameters?.retry_after;
    if (typeof seconds === "number" && Number.isFinite(seconds) && !response.ok) {
      return { outcome: "retry", afterMs: Math.max(0, seconds) * 1000, error };
    }
    return { outcome: "transient", error };
  }
  if (response.status === 401 || response.status === 404) {
    return { outcome: "auth", error: `telegram refused the bot token (HTTP ${response.status} on ${method}): check TELEGRAM_BOT_TOKEN` };
  }
  return { outcome: "rejected", error, description };
}
