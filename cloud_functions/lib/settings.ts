/**
 * The hub's settings that the deployment honours, read from the deployment's environment
 * (`npx convex env set NAME VALUE`) under the daemons' own names (MEMSYNC_<SECTION>__<KEY>), with
 * their defaults and their checks (daemon/config.py). contracts/settings.json pins the names and
 * defaults; settings.test.ts holds this module to it. A bad value is an error naming the variable
 * and what to do, never quietly the default: a cron that reads it fails, and `memsync jobs` shows why.
 * Each setting is read when it is needed, so one bad value stops only what depends on it.
 */
import { REMINDERS_MS, type SignalSpec } from "./alertMachine";
import { APPROVAL_LEAD_MS, type FleetRules, MINUTE_MS, SIGNALS } from "./alertSignals";
import { APPROVAL_TIMEOUTS_MS, DEFAULT_APPROVAL_TIMEOUT_MS, effectiveExpiry, timeoutOf } from "./approvalPolicy";

// Convex gives every function the deployment's environment variables as process.env (no @types/node here).
declare const process: { env: Record<string, string | undefined> };

export type Env = Record<string, string | undefined>;

const SECOND_MS = 1000;
const HOUR_MS = 60 * MINUTE_MS;
const DAY_MS = 24 * HOUR_MS;

// "Offline after three missed heartbeats" with agents beating once a minute.
export const STALE_AFTER_MS = 3 * MINUTE_MS;
export const SILENT_AFTER_MS = HOUR_MS;
export const AGENT_RETENTION_MS = 30 * DAY_MS;
export const ARCHIVE_AFTER_MS = 90 * DAY_MS;

/** The variable a setting is read from: the daemons' name for it (`jobs.stale_after` -> MEMSYNC_JOBS__STALE_AFTER). */
export const envName = (key: string): string => `MEMSYNC_${key.toUpperCase().replace(".", "__")}`;

function refuse(key: string, raw: string, what: string, fallback: string): never {
  const name = envName(key);
  throw new Error(
    `${name} in the deployment's environment is ${JSON.stringify(raw)}, not ${what}: ` +
      `set it with \`npx convex env set ${name} ...\`, or remove it (\`npx convex env remove ${name}\`) for the default, ${fallback}`,
  );
}

const isAmount = (n: unknown, positive: boolean): n is number =>
  typeof n === "number" && Number.isFinite(n) && (positive ? n > 0 : n >= 0);

// The names these two had before the deployment read the daemons' names: one still set would
// otherwise be dropped without a word.
const FORMER_NAMES: Record<string, string> = {
  "jobs.agent_retention_days": "MEMSYNC_AGENT_RETENTION_DAYS",
  "jobs.archive_after_days": "MEMSYNC_ARCHIVE_AFTER_DAYS",
};

function amount(env: Env, key: string, fallback: number, unit: string, positive: boolean): number {
  const former = FORMER_NAMES[key];
  if (former !== undefined && env[former] !== undefined) {
    throw new Error(
      `${former} in the deployment's environment is now ${envName(key)}, the daemons' name: ` +
        `\`npx convex env set ${envName(key)} ${env[former]}\` and \`npx convex env remove ${former}\``,
    );
  }
  const raw = env[envName(key)];
  if (raw === undefined) return fallback;
  const n = raw.trim() === "" ? NaN : Number(raw);
  if (!isAmount(n, positive)) refuse(key, raw, `a number of ${unit} ${positive ? "above 0" : "(0 or more)"}`, String(fallback));
  return n;
}

function json(env: Env, key: string, what: string, fallback: string): [string, unknown] | null {
  const raw = env[envName(key)];
  if (raw === undefined) return null;
  try {
    return [raw, JSON.parse(raw) as unknown];
  } catch {
    return refuse(key, raw, what, fallback);
  }
}

function amounts(env: Env, key: string, fallback: Record<string, number>, what: string, names?: readonly string[]) {
  const shown = JSON.stringify(fallback);
  const found = json(env, key, what, shown);
  if (found === null) return fallback;
  const [raw, value] = found;
  if (typeof value !== "object" || value === null || Array.isArray(value)) return refuse(key, raw, what, shown);
  for (const [name, n] of Object.entries(value)) {
    if (names !== undefined && !names.includes(name)) refuse(key, raw, `${what} (no signal named ${name}; signals: ${names.join(", ")})`, shown);
    if (!isAmount(n, false)) refuse(key, raw, what, shown);
  }
  return value as Record<string, number>;
}

// pydantic's reading of a boolean, which the daemons use.
const TRUE = ["1", "on", "t", "true", "y", "yes"];
const FALSE = ["0", "off", "f", "false", "n", "no"];

/** Each honoured setting in the hub's own unit, by its key: what contracts/settings.json lists as honoured. */
export const READERS = {
  "jobs.stale_after": (env: Env) => amount(env, "jobs.stale_after", STALE_AFTER_MS / SECOND_MS, "seconds", true),
  "jobs.silent_after": (env: Env) => amount(env, "jobs.silent_after", SILENT_AFTER_MS / SECOND_MS, "seconds", true),
  "jobs.agent_retention_days": (env: Env) => amount(env, "jobs.agent_retention_days", AGENT_RETENTION_MS / DAY_MS, "days", true),
  "jobs.archive_after_days": (env: Env) => amount(env, "jobs.archive_after_days", ARCHIVE_AFTER_MS / DAY_MS, "days", true),
  "jobs.approval_timeouts": (env: Env) =>
    amounts(
      env,
      "jobs.approval_timeouts",
      Object.fromEntries(Object.entries(APPROVAL_TIMEOUTS_MS).map(([c, ms]) => [c, ms / MINUTE_MS])),
      'a JSON object of minutes by category (0 or more), e.g. {"send_message": 60}',
    ),
  "jobs.default_approval_timeout": (env: Env) =>
    amount(env, "jobs.default_approval_timeout", DEFAULT_APPROVAL_TIMEOUT_MS / MINUTE_MS, "minutes", false),
  "alerts.enabled": (env: Env): boolean => {
    const raw = env[envName("alerts.enabled")];
    if (raw === undefined) return true;
    const word = raw.trim().toLowerCase();
    if (TRUE.includes(word)) return true;
    if (FALSE.includes(word)) return false;
    return refuse("alerts.enabled", raw, "true or false", "true");
  },
  "alerts.reminders": (env: Env): number[] => {
    const fallback = REMINDERS_MS.map((ms) => ms / HOUR_MS);
    const what = "a JSON list of hours down (0 or more), e.g. [1, 4, 24]";
    const found = json(env, "alerts.reminders", what, JSON.stringify(fallback));
    if (found === null) return fallback;
    const [raw, value] = found;
    if (!Array.isArray(value) || !value.every((n) => isAmount(n, false))) return refuse("alerts.reminders", raw, what, JSON.stringify(fallback));
    return value as number[];
  },
  "alerts.grace": (env: Env) =>
    amounts(env, "alerts.grace", {}, 'a JSON object of minutes by signal (0 or more), e.g. {"offline": 15}', Object.keys(SIGNALS)),
  "alerts.approval_lead": (env: Env) => amount(env, "alerts.approval_lead", APPROVAL_LEAD_MS / MINUTE_MS, "minutes", false),
} as const;

export const staleAfterMs = (env: Env = process.env): number => READERS["jobs.stale_after"](env) * SECOND_MS;
export const silentAfterMs = (env: Env = process.env): number => READERS["jobs.silent_after"](env) * SECOND_MS;
export const agentRetentionMs = (env: Env = process.env): number => READERS["jobs.agent_retention_days"](env) * DAY_MS;
export const archiveAfterDays = (env: Env = process.env): number => READERS["jobs.archive_after_days"](env);
export const approvalLeadMs = (env: Env = process.env): number => READERS["alerts.approval_lead"](env) * MINUTE_MS;
export const alertsEnabled = (env: Env = process.env): boolean => READERS["alerts.enabled"](env);

/** The approval policy's timeouts: the category table, and the timeout of a category not in it (ms). */
export function approvalTimeouts(env: Env = process.env): { timeoutsMs: Record<string, number>; defaultMs: number } {
  const table = READERS["jobs.approval_timeouts"](env);
  return {
    timeoutsMs: Object.fromEntries(Object.entries(table).map(([c, minutes]) => [c, Math.trunc(minutes * MINUTE_MS)])),
    defaultMs: Math.trunc(READERS["jobs.default_approval_timeout"](env) * MINUTE_MS),
  };
}

/**
 * The signal table with the deployment's reminders and graces, as daemon/alerts/watch.py's specs:
 * the reminders replace every signal's that has any; a configured grace alone decides (no count).
 */
export function signalSpecs(env: Env = process.env): Record<string, SignalSpec> {
  const reminders = READERS["alerts.reminders"](env).map((hours) => Math.trunc(hours * HOUR_MS));
  const found: Record<string, SignalSpec> = {};
  for (const [code, spec] of Object.entries(SIGNALS)) found[code] = spec.remindersMs.length ? { ...spec, remindersMs: reminders } : spec;
  for (const [code, minutes] of Object.entries(READERS["alerts.grace"](env))) {
    found[code] = { ...found[code], graceMs: Math.trunc(minutes * MINUTE_MS), badCount: 0 };
  }
  return found;
}

/** When a pending approval expires unanswered under the deployment's timeouts (approvalPolicy's effectiveExpiry). */
export function deploymentExpiry(approval: Parameters<typeof effectiveExpiry>[0], env: Env = process.env): number {
  const { timeoutsMs, defaultMs } = approvalTimeouts(env);
  return effectiveExpiry(approval, timeoutsMs, defaultMs);
}

/** The alerts cron's rules (lib/alertSignals.ts's observeFleet): the approval lead and the deployment's timeouts. */
export function deploymentFleetRules(env: Env = process.env): FleetRules {
  const { timeoutsMs, defaultMs } = approvalTimeouts(env);
  return { approvalLeadMs: approvalLeadMs(env), timeoutsMs, defaultTimeoutMs: defaultMs };
}

/** A category's timeout under the deployment's policy, in ms. */
export function deploymentTimeoutOf(category: string, env: Env = process.env): number {
  const { timeoutsMs, defaultMs } = approvalTimeouts(env);
  return timeoutOf(category, timeoutsMs, defaultMs);
}
