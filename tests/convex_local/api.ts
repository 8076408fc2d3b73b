/**
 * Convex's HTTP API (POST /api/query | /api/mutation | /api/action) answered from convex-test's
 * in-memory backend running the real cloud_functions, and the deployment's HTTP actions
 * (cloud_functions/http.ts, e.g. POST /telegram) for every other path. Loaded by server.mjs through
 * vite-node, because the module list comes from Vite's import.meta.glob.
 */
import { makeFunctionReference } from "convex/server";
import { convexToJson, jsonToConvex, type Value } from "convex/values";
import { backend, modules } from "../../cloud_functions/test.modules";
import schema from "../../cloud_functions/schema";
import { insertSeed } from "../../cloud_functions/test.seed";

export type Kind = "query" | "mutation" | "action";
export type Reply = { httpStatus: number; body: Record<string, unknown> };
export type Request = { kind: Kind; admin: boolean; body: unknown };

type Registered = { isQuery?: boolean; isMutation?: boolean; isAction?: boolean; isPublic?: boolean; isInternal?: boolean };

const t = backend();
const KIND_NAMES: Record<Kind, string> = { query: "Query", mutation: "Mutation", action: "Action" };

/** "episodes:bulkSyncEpisodes" -> the registered function, or null. */
async function lookup(path: string): Promise<Registered | null> {
  const [modulePath, exportName = "default"] = path.split(":");
  const load = modules[`./${modulePath}.ts`] ?? modules[`./${modulePath}.js`];
  if (load === undefined) return null;
  const exported = ((await load()) as Record<string, unknown>)[exportName];
  return typeof exported === "function" || typeof exported === "object" ? (exported as Registered) : null;
}

function kindOf(fn: Registered): Kind | null {
  return fn.isQuery ? "query" : fn.isMutation ? "mutation" : fn.isAction ? "action" : null;
}

function failure(errorMessage: string, errorData?: Value): Reply {
  const body: Record<string, unknown> = { status: "error", errorMessage, logLines: [] };
  if (errorData !== undefined) body.errorData = convexToJson(errorData);
  return { httpStatus: 200, body };
}

function badRequest(code: string, message: string): Reply {
  return { httpStatus: 400, body: { code, message } };
}

// One call at a time: Convex runs mutations as serializable transactions; here, one after another.
let queue: Promise<unknown> = Promise.resolve();
function serially<T>(work: () => Promise<T>): Promise<T> {
  const result = queue.then(work, work);
  queue = result.catch(() => undefined);
  return result;
}

/** console output of the function, as Convex returns it in logLines (never on our stdout). */
async function capturingLogs<T>(work: () => Promise<T>): Promise<{ result: T; logLines: string[] }> {
  const logLines: string[] = [];
  const saved = { log: console.log, info: console.info, warn: console.warn, error: console.error };
  const capture = (level: string) => (...args: unknown[]) =>
    logLines.push(`[${level}] ${args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" ")}`);
  Object.assign(console, { log: capture("LOG"), info: capture("INFO"), warn: capture("WARN"), error: capture("ERROR") });
  try {
    return { result: await work(), logLines };
  } finally {
    Object.assign(console, saved);
  }
}

export async function handle(request: Request): Promise<Reply> {
  const body = request.body as { path?: unknown; args?: unknown; format?: unknown } | null;
  if (typeof body !== "object" || body === null || typeof body.path !== "string") {
    return badRequest("BadJsonBody", "expected {\"path\": string, \"args\": object, \"format\": \"json\"}");
  }
  const format = body.format ?? "json";
  if (format !== "json" && format !== "convex_encoded_json") return badRequest("BadFormat", `unknown format ${String(format)}`);
  const path = body.path.replace(/\.js(?=:|$)/, "");
  // Convex's own client sends [args]; the documented HTTP API sends args.
  const rawArgs = Array.isArray(body.args) ? body.args[0] : (body.args ?? {});
  const fn = await lookup(path);
  if (fn === null || (fn.isInternal && !request.admin)) {
    return failure(`Could not find public function for '${path}'. Did you forget to run \`npx convex dev\` or \`npx convex deploy\`?`);
  }
  const kind = kindOf(fn);
  if (kind !== request.kind) {
    return failure(`Trying to execute ${path} as ${KIND_NAMES[request.kind]}, but it is defined as ${kind ? KIND_NAMES[kind] : "something else"}.`);
  }
  let args: Value;
  try {
    args = jsonToConvex(rawArgs as never);
  } catch (error) {
    return failure(`ArgumentValidationError: ${(error as Error).message}`);
  }
  const reference = makeFunctionReference<Kind>(path) as never;
  try {
    const { result, logLines } = await serially(() =>
      capturingLogs(() => (t[kind] as (ref: never, args: Value) => Promise<Value>)(reference, args)),
    );
    return { httpStatus: 200, body: { status: "success", value: convexToJson(result ?? null), logLines } };
  } catch (error) {
    const { name, message, data } = error as { name?: string; message?: string; data?: Value };
    if (name === "ConvexError" && data !== undefined) return failure(`Uncaught ConvexError: ${message}`, data);
    return failure(`Uncaught ${name ?? "Error"}: ${message ?? String(error)}`);
  }
}

export type HttpReply = { status: number; headers: [string, string][]; body: Uint8Array };

/**
 * An HTTP action's answer (convex-test's t.fetch routes by http.ts's router; 404 for no route).
 * Not queued behind the API calls: a deployment runs HTTP actions concurrently too, and their
 * mutations are serialized by the backend itself.
 */
export async function fetchHttp(path: string, init: { method: string; headers: [string, string][]; body?: Uint8Array }): Promise<HttpReply> {
  const response = await t.fetch(path, {
    method: init.method,
    headers: init.headers,
    ...(init.body === undefined || init.method === "GET" || init.method === "HEAD" ? {} : { body: init.body }),
  });
  return { status: response.status, headers: [...response.headers.entries()], body: new Uint8Array(await response.arrayBuffer()) };
}

/**
 * Everything the deployment stores, read around the functions (what an operator with the
 * dashboard's data browser and file storage sees): every table's documents as JSON, and every
 * stored file's bytes (base64). For tests that check a text is gone from Convex's own data.
 */
export async function dump(): Promise<{ tables: Record<string, unknown[]>; files: Record<string, string> }> {
  return await serially(() =>
    t.run(async (ctx) => {
      const tables: Record<string, unknown[]> = {};
      for (const name of Object.keys(schema.tables)) {
        tables[name] = await ctx.db.query(name as never).collect();
      }
      const files: Record<string, string> = {};
      for (const file of await ctx.db.system.query("_storage").collect()) {
        const blob = await ctx.storage.get(file._id);
        if (blob !== null) files[file._id] = base64(new Uint8Array(await blob.arrayBuffer()));
      }
      return { tables, files };
    }),
  );
}

function base64(bytes: Uint8Array): string {
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
}

/**
 * The seed design's documents (tests/data/seed/) written into the tables around the functions, as
 * the seed's own functions left them (validated by the schema): a deployment to `memsync adopt`.
 */
export async function seed(): Promise<Record<string, number>> {
  return await serially(() => t.run((ctx) => insertSeed(ctx.db)));
}
