/**
 * A fake Telegram Bot API for the tests: a real HTTP server on 127.0.0.1 (the functions' own fetch
 * reaches it, nothing is stubbed). It records every request, answers like Telegram, and fails on
 * demand (a 429 with retry_after, a 5xx, a 400 with a description, every call with a revoked token).
 */
import http, { type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, vi } from "vitest";
import { backend, registerSite, type Backend } from "./test.setup";

export type BotRequest = { token: string; method: string; body: Record<string, unknown> };
type Scripted = { method: string; status: number; body: Record<string, unknown> };

export class FakeBotApi {
  readonly requests: BotRequest[] = [];
  private readonly scripted: Scripted[] = [];
  private readonly refused = new Map<string, { status: number; body: Record<string, unknown> }>();
  private nextMessageId = 1;
  private server: Server | null = null;
  url = "";

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      let text = "";
      const decoder = new TextDecoder();
      req.on("data", (chunk) => (text += decoder.decode(chunk, { stream: true })));
      req.on("end", () => {
        const [, token = "", method = ""] = /^\/bot([^/]*)\/(.*)$/.exec(req.url ?? "") ?? [];
        const body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
        this.requests.push({ token, method, body });
        const [status, reply] = this.answer(method, token);
        res.writeHead(status, { "Content-Type": "application/json" });
        res.end(JSON.stringify(reply));
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  /** The next call of `method` gets this answer instead of success. */
  failNext(method: string, status: number, body: Record<string, unknown> = {}): void {
    this.scripted.push({ method, status, body: { ok: false, error_code: status, ...body } });
  }

  /** Every call with `token` gets this answer, as Telegram refuses a revoked (401) or malformed (404) token. */
  refuseToken(token: string, status: number, body: Record<string, unknown>): void {
    this.refused.set(token, { status, body });
  }

  of(method: string): Record<string, unknown>[] {
    return this.requests.filter((r) => r.method === method).map((r) => r.body);
  }

  private answer(method: string, token: string): [number, Record<string, unknown>] {
    const refusal = this.refused.get(token);
    if (refusal !== undefined) return [refusal.status, refusal.body];
    const i = this.scripted.findIndex((s) => s.method === method);
    if (i >= 0) {
      const [scripted] = this.scripted.splice(i, 1);
      return [scripted.status, scripted.body];
    }
    if (method === "sendMessage") return [200, { ok: true, result: { message_id: this.nextMessageId++ } }];
    if (method === "editMessageText") return [200, { ok: true, result: { message_id: 0 } }];
    return [200, { ok: true, result: true }];
  }
}

export const TOKEN = "123456:TEST-bot-token_do-not-leak";
export const CHAT = "-100777";
export const WEBHOOK_SECRET = "webhook-secret-42";
const NAMES = ["TELEGRAM_BOT_TOKEN", "TELEGRAM_CHAT_ID", "TELEGRAM_API_BASE", "TELEGRAM_WEBHOOK_SECRET", "TELEGRAM_QUIET_HOURS", "TELEGRAM_TIMEZONE"];

/** The deployment's Telegram settings, pointing at `api` (convex-test's functions read process.env). */
export function configureTelegram(api: FakeBotApi, extra: Record<string, string> = {}): void {
  Object.assign(process.env, {
    TELEGRAM_BOT_TOKEN: TOKEN,
    TELEGRAM_CHAT_ID: CHAT,
    TELEGRAM_API_BASE: api.url,
    TELEGRAM_WEBHOOK_SECRET: WEBHOOK_SECRET,
    ...extra,
  });
}

export function unconfigureTelegram(): void {
  for (const name of NAMES) delete process.env[name];
}

type Site = { site: string; secret: string };
export type TelegramBackend<S extends string> = {
  t: Backend;
  bot: FakeBotApi;
  /** Runs every scheduled function that is due now, and what they schedule for now. */
  settle: () => Promise<void>;
} & Record<S, Site>;

/**
 * Registers the hooks of a test file that talks to Telegram: before each test a fake Bot API,
 * Telegram configured to use it, fake timers at `now`, a fresh backend and the `sites` registered;
 * after it, all undone. The returned object's fields are filled anew for each test.
 */
export function useTelegramBackend<S extends string>(now: number, sites: readonly S[]): TelegramBackend<S> {
  const harness = {
    settle: () => harness.t.finishAllScheduledFunctions(() => vi.advanceTimersByTime(0)),
  } as TelegramBackend<S>;
  beforeEach(async () => {
    harness.bot = await new FakeBotApi().start();
    configureTelegram(harness.bot);
    // Fake timers for the clock and the scheduler; advanced by 0 while a request is on the wire, so
    // that the fetch's own timers (connect timeout) never fire early.
    vi.useFakeTimers();
    vi.setSystemTime(now);
    harness.t = backend();
    for (const name of sites) (harness as Record<S, Site>)[name] = await registerSite(harness.t, name);
  });
  afterEach(async () => {
    vi.useRealTimers();
    unconfigureTelegram();
    await harness.bot.stop();
  });
  return harness;
}
