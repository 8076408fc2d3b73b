/**
 * The local server keeps Convex's HTTP API contract: node --test tests/convex_local/
 * (the functions themselves are tested in cloud_functions with vitest).
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import path from "node:path";
import readline from "node:readline";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const ADMIN = "test-admin-key";
let server;
let url;

before(async () => {
  server = spawn(process.execPath, [path.join(here, "server.mjs")], {
    env: { ...process.env, PORT: "0", CONVEX_LOCAL_ADMIN_KEY: ADMIN },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const line = await new Promise((resolve) => readline.createInterface({ input: server.stdout }).once("line", resolve));
  ({ url } = JSON.parse(line));
});
after(() => server.stdin.end());

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
