/* eslint-disable */
/**
 * Generated `api` utility.
 *
 * THIS CODE IS AUTOMATICALLY GENERATED.
 *
 * To regenerate, run `npx convex dev`.
 * @module
 */

import type {
  ApiFromModules,
  FilterApi,
  FunctionReference,
} from "convex/server";
import type * as agents from "../agents.js";
import type * as approvals from "../approvals.js";
import type * as crons from "../crons.js";
import type * as digest from "../digest.js";
import type * as episodes from "../episodes.js";
import type * as health from "../health.js";
import type * as jobs from "../jobs.js";
import type * as lib_alerts from "../lib/alerts.js";
import type * as lib_auth from "../lib/auth.js";
import type * as lib_changes from "../lib/changes.js";
import type * as lib_cronRun from "../lib/cronRun.js";
import type * as lib_cursor from "../lib/cursor.js";
import type * as lib_episodeView from "../lib/episodeView.js";
import type * as lib_errors from "../lib/errors.js";
import type * as lib_metadata from "../lib/metadata.js";
import type * as lib_owned from "../lib/owned.js";
import type * as lib_push from "../lib/push.js";
import type * as lib_validators from "../lib/validators.js";
import type * as scheduled from "../scheduled.js";
import type * as sites from "../sites.js";
import type * as sources from "../sources.js";
import type * as tasks from "../tasks.js";

/**
 * A utility for referencing Convex functions in your app's API.
 *
 * Usage:
 * ```js
 * const myFunctionReference = api.myModule.myFunction;
 * ```
 */
declare const fullApi: ApiFromModules<{
  agents: typeof agents;
  approvals: typeof approvals;
  crons: typeof crons;
  digest: typeof digest;
  episodes: typeof episodes;
  health: typeof health;
  jobs: typeof jobs;
  "lib/alerts": typeof lib_alerts;
  "lib/auth": typeof lib_auth;
  "lib/changes": typeof lib_changes;
  "lib/cronRun": typeof lib_cronRun;
  "lib/cursor": typeof lib_cursor;
  "lib/episodeView": typeof lib_episodeView;
  "lib/errors": typeof lib_errors;
  "lib/metadata": typeof lib_metadata;
  "lib/owned": typeof lib_owned;
  "lib/push": typeof lib_push;
  "lib/validators": typeof lib_validators;
  scheduled: typeof scheduled;
  sites: typeof sites;
  sources: typeof sources;
  tasks: typeof tasks;
}>;
export declare const api: FilterApi<
  typeof fullApi,
  FunctionReference<any, "public">
>;
export declare const internal: FilterApi<
  typeof fullApi,
  FunctionReference<any, "internal">
>;
