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
import type * as adopt from "../adopt.js";
import type * as agents from "../agents.js";
import type * as alerts from "../alerts.js";
import type * as approvals from "../approvals.js";
import type * as archive from "../archive.js";
import type * as archiveNode from "../archiveNode.js";
import type * as collaborators from "../collaborators.js";
import type * as crons from "../crons.js";
import type * as digest from "../digest.js";
import type * as dreams from "../dreams.js";
import type * as episodes from "../episodes.js";
import type * as health from "../health.js";
import type * as http from "../http.js";
import type * as jobs from "../jobs.js";
import type * as lib_adoption from "../lib/adoption.js";
import type * as lib_alertMachine from "../lib/alertMachine.js";
import type * as lib_alertSignals from "../lib/alertSignals.js";
import type * as lib_alertStore from "../lib/alertStore.js";
import type * as lib_alertText from "../lib/alertText.js";
import type * as lib_alerts from "../lib/alerts.js";
import type * as lib_approvalFlow from "../lib/approvalFlow.js";
import type * as lib_approvalMessage from "../lib/approvalMessage.js";
import type * as lib_approvalPolicy from "../lib/approvalPolicy.js";
import type * as lib_archiveFormat from "../lib/archiveFormat.js";
import type * as lib_archiveWrite from "../lib/archiveWrite.js";
import type * as lib_auth from "../lib/auth.js";
import type * as lib_buttonPresses from "../lib/buttonPresses.js";
import type * as lib_changes from "../lib/changes.js";
import type * as lib_collaborators from "../lib/collaborators.js";
import type * as lib_cronRun from "../lib/cronRun.js";
import type * as lib_cursor from "../lib/cursor.js";
import type * as lib_digestMessage from "../lib/digestMessage.js";
import type * as lib_dreamSteps from "../lib/dreamSteps.js";
import type * as lib_episodeView from "../lib/episodeView.js";
import type * as lib_errors from "../lib/errors.js";
import type * as lib_fleet from "../lib/fleet.js";
import type * as lib_links from "../lib/links.js";
import type * as lib_metadata from "../lib/metadata.js";
import type * as lib_outbox from "../lib/outbox.js";
import type * as lib_outboxKeys from "../lib/outboxKeys.js";
import type * as lib_owned from "../lib/owned.js";
import type * as lib_push from "../lib/push.js";
import type * as lib_quietHours from "../lib/quietHours.js";
import type * as lib_routing from "../lib/routing.js";
import type * as lib_runSummary from "../lib/runSummary.js";
import type * as lib_settings from "../lib/settings.js";
import type * as lib_taskFlow from "../lib/taskFlow.js";
import type * as lib_taskPolicy from "../lib/taskPolicy.js";
import type * as lib_telegram from "../lib/telegram.js";
import type * as lib_uses from "../lib/uses.js";
import type * as lib_validators from "../lib/validators.js";
import type * as links from "../links.js";
import type * as scheduled from "../scheduled.js";
import type * as sites from "../sites.js";
import type * as sources from "../sources.js";
import type * as tasks from "../tasks.js";
import type * as telegram from "../telegram.js";
import type * as uses from "../uses.js";

/**
 * A utility for referencing Convex functions in your app's API.
 *
 * Usage:
 * ```js
 * const myFunctionReference = api.myModule.myFunction;
 * ```
 */
declare const fullApi: ApiFromModules<{
  adopt: typeof adopt;
  agents: typeof agents;
  alerts: typeof alerts;
  approvals: typeof approvals;
  archive: typeof archive;
  archiveNode: typeof archiveNode;
  collaborators: typeof collaborators;
  crons: typeof crons;
  digest: typeof digest;
  dreams: typeof dreams;
  episodes: typeof episodes;
  health: typeof health;
  http: typeof http;
  jobs: typeof jobs;
  "lib/adoption": typeof lib_adoption;
  "lib/alertMachine": typeof lib_alertMachine;
  "lib/alertSignals": typeof lib_alertSignals;
  "lib/alertStore": typeof lib_alertStore;
  "lib/alertText": typeof lib_alertText;
  "lib/alerts": typeof lib_alerts;
  "lib/approvalFlow": typeof lib_approvalFlow;
  "lib/approvalMessage": typeof lib_approvalMessage;
  "lib/approvalPolicy": typeof lib_approvalPolicy;
  "lib/archiveFormat": typeof lib_archiveFormat;
  "lib/archiveWrite": typeof lib_archiveWrite;
  "lib/auth": typeof lib_auth;
  "lib/buttonPresses": typeof lib_buttonPresses;
  "lib/changes": typeof lib_changes;
  "lib/collaborators": typeof lib_collaborators;
  "lib/cronRun": typeof lib_cronRun;
  "lib/cursor": typeof lib_cursor;
  "lib/digestMessage": typeof lib_digestMessage;
  "lib/dreamSteps": typeof lib_dreamSteps;
  "lib/episodeView": typeof lib_episodeView;
  "lib/errors": typeof lib_errors;
  "lib/fleet": typeof lib_fleet;
  "lib/links": typeof lib_links;
  "lib/metadata": typeof lib_metadata;
  "lib/outbox": typeof lib_outbox;
  "lib/outboxKeys": typeof lib_outboxKeys;
  "lib/owned": typeof lib_owned;
  "lib/push": typeof lib_push;
  "lib/quietHours": typeof lib_quietHours;
  "lib/routing": typeof lib_routing;
  "lib/runSummary": typeof lib_runSummary;
  "lib/settings": typeof lib_settings;
  "lib/taskFlow": typeof lib_taskFlow;
  "lib/taskPolicy": typeof lib_taskPolicy;
  "lib/telegram": typeof lib_telegram;
  "lib/uses": typeof lib_uses;
  "lib/validators": typeof lib_validators;
  links: typeof links;
  scheduled: typeof scheduled;
  sites: typeof sites;
  sources: typeof sources;
  tasks: typeof tasks;
  telegram: typeof telegram;
  uses: typeof uses;
}>;
export declare const api: FilterApi<
  typeof fullApi,
  FunctionReference<any, "public">
>;
export declare const internal: FilterApi<
  typeof fullApi,
  FunctionReference<any, "internal">
>;
