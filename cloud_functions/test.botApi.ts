/**
 * A fake Telegram Bot API for the tests: a real HTTP server on 127.0.0.1 (the functions' own fetch
 * reaches it, nothing is stubbed). It records every request, answers like Telegram, and fails on
 * demand (a 429 with retry_after, a 5xx, a 400 with a description, every call with a revoked token).
 */
import http, { type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, vi } from "vitest";
import { backend, registerSite, type Backend } from "./test.setup";

// The real clock's setTimeout, taken before any test fakes it: the tests' own waits for the next
// turn of the event loop (never for time to pass).
const realSetTimeout = globalThis.setTimeout.bind(globalThis);

/** A request the fake received: `ok` whether it answered success, `at` the (fake) time it came. */
export type BotRequest = { token: string; method: string; body: Record<string, unknown>; ok: boolean; at: number; messageId?: number };
type Scripted = { method: string | null; status: number; body: Record<string, unknown> };

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
        const [status, reply] = this.answer(method, token);
        const sent = (reply as { result?: { message_id?: unknown } }).result?.message_id;
        this.requests.push({ token, method, body, ok: status === 200, at: Date.now(), ...(typeof sent === "number" && sent > 0 ? { messageId: sent } : {}) });
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

  /** The next call of `method` (null: of any method) gets this answer instead of success. */
  failNext(method: string | null, status: number, body: Record<string, unknown> = {}): void {
    this.scripted.push({ method, status, body: { ok: false, error_code: status, ...body } });
  }

  /** Every call with `token` gets this answer, as Telegram refuses a revoked (401) or malformed (404) token. */
  refuseToken(token: string, status: number, body: Record<string, unknown>): void {
    this.refused.set(token, { status, body });
  }

  of(method: string): Record<string, unknown>[] {
    return this.requests.filter((r) => r.method === method).map((r) => r.body);
  }

  /** The successful requests of `method`, with what the fake answered (a sent message's id). */
  ok(method: string): BotRequest[] {
    return this.requests.filter((r) => r.method === method && r.ok);
  }

  private answer(method: string, token: string): [number, Record<string, unknown>] {
    const refusal = this.refused.get(token);
    if (refusal !== undefined) return [refusal.status, refusal.body];
    const i = this.scripted.findIndex((s) => s.method === method || s.method === null);
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

/**
 * deliver waits for each message's moment (telegram.ts: `await pause(ms)`, a promise resolved by a
 * timer): under fake timers nothing would end the wait, so `letPausesPass` moves the clock to the
 * next timer while such a wait is pending and no request is on the wire (the fetch's own timers
 * must never fire early), as the seconds would pass. A wait is known by its timer's handler, a
 * promise's resolve (native code), where the scheduler's and the fetch's timers run code of theirs.
 * Sets the watch on setTimeout and fetch, the lowest seams; `unwatch` takes it off.
 */
function watchPauses(): { letPausesPass: () => void; unwatch: () => void } {
  const fakeSetTimeout = globalThis.setTimeout;
  const realFetch = globalThis.fetch;
  let waits = 0;
  let onTheWire = 0;
  globalThis.setTimeout = ((handler: (...args: unknown[]) => void, ms?: number, ...args: unknown[]) => {
    if (typeof handler !== "function" || !/\[native code\]/.test(Function.prototype.toString.call(handler))) {
      return fakeSetTimeout(handler, ms, ...args);
    }
    waits += 1;
    return fakeSetTimeout(() => {
      waits -= 1;
      handler(...args);
    }, ms);
  }) as typeof setTimeout;
  // Whole answers, read before the caller sees them: once a call returns, nothing of it is on the wire.
  globalThis.fetch = (async (...args: Parameters<typeof fetch>) => {
    onTheWire += 1;
    try {
      const response = await realFetch(...args);
      const body = [101, 204, 205, 304].includes(response.status) ? null : await response.arrayBuffer();
      return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
    } finally {
      onTheWire -= 1;
    }
  }) as typeof fetch;
  return {
    letPausesPass: () => {
      vi.advanceTimersByTime(0);
      if (waits > 0 && onTheWire === 0) vi.advanceTimersToNextTimer();
    },
    unwatch: () => {
      globalThis.fetch = realFetch;
    },
  };
}

type Site = { site: string; secret: string };
export type TelegramBackend<S extends string> = {
  t: Backend;
  bot: FakeBotApi;
  /**
   * Runs every scheduled function that is due now, and what they schedule for now; a deliver's
   * pauses between messages pass (the clock moves a second for each).
   */
  settle: () => Promise<void>;
  /** `running` (an action called directly), with its deliver pauses let pass as settle lets them. */
  paced: <T>(running: Promise<T>) => Promise<T>;
} & Record<S, Site>;

/**
 * Registers the hooks of a test file that talks to Telegram: before each test a fake Bot API,
 * Telegram configured to use it, fake timers at `now`, a fresh backend and the `sites` registered;
 * after it, all undone. The returned object's fields are filled anew for each test.
 */
export function useTelegramBackend<S extends string>(now: number, sites: readonly S[]): TelegramBackend<S> {
  let pauses: { letPausesPass: () => void; unwatch: () => void } = {
    letPausesPass: () => void vi.advanceTimersByTime(0),
    unwatch: () => undefined,
  };
  const harness = {
    settle: () => harness.t.finishAllScheduledFunctions(() => pauses.letPausesPass()),
    paced: async <T>(running: Promise<T>): Promise<T> => {
      let done = false;
      const result = running.finally(() => (done = true));
      while (!done) {
        pauses.letPausesPass();
        await new Promise((resolve) => realSetTimeout(resolve, 0));
      }
      return await result;
    },
  } as TelegramBackend<S>;
  beforeEach(async () => {
    harness.bot = await new FakeBotApi().start();
    configureTelegram(harness.bot);
    // Fake timers for the clock and the scheduler; advanced by 0 while a request is on the wire, so
    // that the fetch's own timers (connect timeout) never fire early, and past deliver's pauses.
    vi.useFakeTimers();
    pauses = watchPauses();
    vi.setSystemTime(now);
    harness.t = backend();
    for (const name of sites) (harness as Record<S, Site>)[name] = await registerSite(harness.t, name);
  });
  afterEach(async () => {
    pauses.unwatch();
    vi.useRealTimers();
    unconfigureTelegram();
    await harness.bot.stop();
  });
  return harness;
}
