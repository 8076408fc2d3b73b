/**
 * The local server keeps Convex's HTTP API contract: node --test tests/convex_local/
 * (the functions themselves are tested in cloud_functions with vitest).
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import http from "node:http";
import path from "node:path";
import readline from "node:readline";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const ADMIN = "test-admin-key";
const BOT_TOKEN = "42:local-test-token";
const HOOK_SECRET = "local-hook-secret";
let server;
let url;

// A fake Telegram Bot API on 127.0.0.1: the server's functions send to it (TELEGRAM_API_BASE).
const botCalls = [];
let botWaiters = [];
const bot = http.createServer((req, res) => {
  let body = "";
  req.on("data", (chunk) => (body += chunk));
  req.on("end", () => {
    botCalls.push({ path: req.url, body: JSON.parse(body || "{}") });
    botWaiters = botWaiters.filter((waiter) => !waiter());
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ ok: true, result: { message_id: botCalls.length } }));
  });
});

/** Resolves once the fake Bot API has had `n` calls. */
function botCallsReach(n) {
  return new Promise((resolve) => {
    const check = () => botCalls.length >= n && (resolve(), true);
    if (!check()) botWaiters.push(check);
  });
}

before(async () => {
  await new Promise((resolve) => bot.listen(0, "127.0.0.1", resolve));
  server = spawn(process.execPath, [path.join(here, "server.mjs")], {
    env: {
      ...process.env,
      PORT: "0",
      CONVEX_LOCAL_ADMIN_KEY: ADMIN,
      TELEGRAM_BOT_TOKEN: BOT_TOKEN,
      TELEGRAM_CHAT_ID: "-100",
      TELEGRAM_API_BASE: `http://127.0.0.1:${bot.address().port}`,
      TELEGRAM_WEBHOOK_SECRET: HOOK_SECRET,
    },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const line = await new Promise((resolve) => readline.createInterface({ input: server.stdout }).once("line", resolve));
  ({ url } = JSON.parse(line));
});
after(() => {
  server.stdin.end();
  bot.close();
  bot.closeAllConnections();
});

async function post(kind, body, headers = {}) {
  const response = await fetch(`${url}/api/${kind}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

const admin = { Authorization: `Convex ${ADMIN}` };

test("the ready line names a 127.0.0.1 URL", () => {
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
});

test("internal functions need the admin key; a wrong admin key is a 401", async () => {
  const register = { path: "sites:register", args: { name: "nokey" }, format: "json" };
  const anonymous = await post("mutation", register);
  assert.equal(anonymous.status, 200);
  assert.equal(anonymous.body.status, "error");
  assert.match(anonymous.body.errorMessage, /Could not find public function for 'sites:register'/);
  assert.equal((await post("mutation", register, { Authorization: "Convex wrong" })).status, 401);
});

test("success and ConvexError replies have Convex's shapes", async () => {
  const registered = await post("mutation", { path: "sites:register", args: { name: "laptop" }, format: "json" }, admin);
  assert.equal(registered.status, 200);
  assert.deepEqual(Object.keys(registered.body).sort(), ["logLines", "status", "value"]);
  const { secret } = registered.body.value;
  assert.match(secret, /^[0-9a-f]{64}$/);

  const cursor = await post("mutation", { path: "episodes:updateCursor", args: { site: "laptop", secret, lastSyncedId: 4 }, format: "json" });
  assert.equal(cursor.body.status, "success");
  assert.equal(cursor.body.value.lastSyncedId, 4);

  const denied = await post("query", { path: "episodes:getCursor", args: { site: "laptop", secret: "nope" }, format: "json" });
  assert.equal(denied.status, 200);
  assert.equal(denied.body.status, "error");
  assert.equal(denied.body.errorData.code, "UNAUTHORIZED");
  assert.ok(!denied.body.errorMessage.includes(secret));
});

test("Convex's own client format (args as a one-element array) works too", async () => {
  const reply = await post("query", { path: "health:syncHealth", args: [{ site: "x", secret: "y" }], format: "convex_encoded_json" });
  assert.equal(reply.body.errorData.code, "UNAUTHORIZED");
});

test("a query path called as a mutation, an unknown path, bad JSON", async () => {
  const wrongKind = await post("mutation", { path: "episodes:getCursor", args: {}, format: "json" });
  assert.match(wrongKind.body.errorMessage, /as Mutation, but it is defined as Query/);
  const unknown = await post("query", { path: "nowhere:fn", args: {}, format: "json" });
  assert.match(unknown.body.errorMessage, /Could not find public function/);
  const response = await fetch(`${url}/api/query`, { method: "POST", body: "{" });
  assert.equal(response.status, 400);
});

test("other paths are the deployment's HTTP actions: the Telegram webhook, end to end", async () => {
  const registered = await post("mutation", { path: "sites:register", args: { name: "hooked" }, format: "json" }, admin);
  const { secret } = registered.body.value;
  const created = await post("mutation", {
    path: "approvals:create",
    args: { site: "hooked", secret, agentName: "claude", actionType: "deploy", priority: "normal", reviewers: ["7"], expiresAt: Date.now() + 3_600_000 },
    format: "json",
  });
  assert.equal(created.body.status, "success", JSON.stringify(created.body));
  const { approvalId } = created.body.value;
  // The scheduled deliver runs on real timers and reaches the fake Bot API, with the env's token.
  await botCallsReach(1);
  assert.equal(botCalls[0].path, `/bot${BOT_TOKEN}/sendMessage`);
  assert.match(botCalls[0].body.text, /^🟡 Approval needed: deploy by claude on hooked/);

  const hook = (secretHeader, body) =>
    fetch(`${url}/telegram`, {
      method: "POST",
      headers: { "Content-Type": "application/json", ...(secretHeader ? { "X-Telegram-Bot-Api-Secret-Token": secretHeader } : {}) },
      body,
    });
  assert.equal((await hook("wrong", "{}")).status, 401);
  assert.equal((await hook(HOOK_SECRET, "{nope")).status, 400);
  const press = { update_id: 1, callback_query: { id: "cb1", from: { id: 7, first_name: "Ada" }, message: { chat: { id: -100 } }, data: `a:${approvalId}` } };
  assert.equal((await hook(HOOK_SECRET, JSON.stringify(press))).status, 200);
  const found = await post("query", { path: "approvals:get", args: { site: "hooked", secret, approvalId }, format: "json" });
  assert.equal(found.body.value.status, "approved");
  assert.equal(found.body.value.resolvedBy, "Ada");
  await botCallsReach(3); // the press answered, the message edited
  assert.deepEqual(botCalls.map((call) => call.path.split("/").pop()).sort(), ["answerCallbackQuery", "editMessageText", "sendMessage"]);

  const missing = await fetch(`${url}/nowhere`);
  assert.equal(missing.status, 404);
});
