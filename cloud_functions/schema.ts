import { defineSchema, defineTable } from "convex/server";
import { v } from "convex/values";
import {
  agentStatus,
  archiveManifest,
  approvalPriority,
  approvalStatus,
  memsyncEpisode,
  healthState,
  jobOutcome,
  linkKind,
  nullable,
  seedEpisode,
  taskStatus,
} from "./lib/validators";

/** Numbers are v.number() (float64, exact to 2^53): int64 would arrive as strings in JSON format. */
export default defineSchema({
  // Two shapes: memsync's own, and the seed design's (seedEpisode: what `convex-episode-sync.sh`
  // pushed), so that deploying onto a running seed deployment is not refused. Only adopt.ts reads
  // a seed document: every other reader narrows to memsync's shape first (lib/episodeView.ts).
  episodes: defineTable(v.union(v.object(memsyncEpisode), v.object(seedEpisode)))
    // The upsert key: Convex has no unique constraints, so uniqueness is lookup-then-write in one mutation.
    .index("by_site_source", ["sourceSite", "sourceId"])
    // Export order: a site's episodes by first receipt (edits keep their place).
    .index("by_site_synced", ["sourceSite", "syncedAt"])
    // The digest: a day's episodes by createdAt, in each `archived` range.
    .index("by_created", ["archived", "createdAt"])
    // Archival (episodes:archiveOld, by ts as on the hub): leading with `archived` keeps archived
    // rows out of every later scan.
    .index("by_archived_ts", ["archived", "ts"])
    // A site's archived keys of a week (archive:verify, archive:episodes, archive:restore).
    .index("by_site_archived_ts", ["sourceSite", "archived", "ts"])
    // Episodes still waiting for a vector: archived=false, qdrantPointId missing.
    .index("by_qdrant", ["archived", "qdrantPointId"])
    // The change feed (episodes:changes), merged with the tombstones' range of the same index.
    .index("by_changeSeq", ["changeSeq"])
    // A site's session in time order: the episodes derived links (led_to) read (links.ts).
    .index("by_site_session", ["sourceSite", "sessionId", "ts"]),

  // The explicit links between memories (lib/links.ts, contracts/links.json), keyed (from, to,
  // kind): written by links:add and by a push whose metadata names an episode, deleted by a forget
  // of either end.
  links: defineTable({
    fromSite: v.string(),
    fromId: v.string(),
    toSite: v.string(),
    toId: v.string(),
    kind: linkKind,
    createdAt: v.number(),
  })
    .index("by_from", ["fromSite", "fromId", "kind", "toSite", "toId"])
    .index("by_to", ["toSite", "toId"]),

  syncCursors: defineTable({
    site: v.string(),
    lastSyncedId: v.number(),
    lastSyncedAt: v.number(),
    totalSynced: v.number(),
  }).index("by_site", ["site"]),

  agents: defineTable({
    agentName: v.string(),
    site: v.string(),
    platform: v.string(),
    status: agentStatus,
    lastHeartbeat: v.number(),
    // Optional: agents registered before they were known.
    interface: v.optional(v.string()),
    lastEpisodeAt: v.optional(v.number()),
  })
    .index("by_site_agent", ["site", "agentName"])
    .index("by_status", ["status", "lastHeartbeat"]),

  // The registry's sites: one row a site, written by its daemon's heartbeats (agents:heartbeatSite).
  // Not fields on `sites`, which only an admin writes and every call reads to authenticate.
  siteStates: defineTable({
    site: v.string(),
    status: agentStatus,
    lastHeartbeat: v.number(),
    version: v.string(),
    host: v.string(),
    pid: v.number(),
    lagS: nullable(v.number()),
    backlog: nullable(v.number()),
    indexState: nullable(v.string()),
    quarantined: v.number(),
    conflicts: v.number(),
    redacted: v.optional(v.number()), // absent: 0 (a daemon from before redaction)
  })
    .index("by_site", ["site"])
    .index("by_status", ["status", "lastHeartbeat"]),

  approvals: defineTable({
    agentName: v.string(),
    site: v.string(),
    actionType: v.string(),
    status: approvalStatus,
    priority: approvalPriority,
    reviewers: v.array(v.string()),
    telegramMessageId: v.optional(v.number()),
    expiresAt: v.number(),
    createdAt: v.number(),
    resolvedAt: v.optional(v.number()),
    resolvedBy: v.optional(v.string()),
    // What the request said of itself, if it said: the policy (approvals.ts) approves on them.
    costUsd: v.optional(v.number()),
    testsPassed: v.optional(v.boolean()),
    // What a person reads of it, and the episode it is about (sourceSite: the requesting site):
    // resolving it writes the episode's approvalStatus.
    summary: v.optional(v.string()),
    sourceSite: v.optional(v.string()),
    sourceId: v.optional(v.string()),
    deferCount: v.optional(v.number()), // how often a person deferred it (at most MAX_DEFERS)
    messageKey: v.optional(v.string()), // its Telegram message's telegramOutbox key
  })
    .index("by_status_expires", ["status", "expiresAt"])
    .index("by_site_status", ["site", "status"])
    // The digest's approvals expired during a day.
    .index("by_status_resolved", ["status", "resolvedAt"]),

  // Work an agent of `site` is to do; one waiting on an approval (approvalId, the same site's)
  // moves with its decision, deferral or expiry (lib/taskPolicy.ts, in the approval's mutation).
  tasks: defineTable({
    title: v.string(),
    agentName: v.string(),
    // Optional for the seed design's tasks, which had none: `memsync adopt` gives each its site.
    site: v.optional(v.string()),
    status: taskStatus,
    assignedTo: v.optional(v.string()),
    approvalId: v.optional(v.id("approvals")),
    createdAt: v.optional(v.number()), // absent on a task from before memsync: _creationTime
    updatedAt: v.optional(v.number()), // its latest change; absent: never changed since created
  })
    .index("by_site_status", ["site", "status"])
    .index("by_status", ["status"])
    .index("by_approval", ["approvalId"]),

  // The dream cycle (dreams.ts): every step it took, standing or undone (kept for good, so that
  // nothing is lost and `memsync unmerge` undoes a step exactly), and the links its steps made.
  dreamSteps: defineTable({
    kind: v.string(), // consolidates | supersedes
    canonicalSite: v.string(),
    canonicalId: v.string(),
    members: v.array(v.object({ site: v.string(), sourceId: v.string() })),
    at: v.number(),
    run: v.string(),
    reason: v.string(),
    synthesis: v.optional(v.any()),
    undoneAt: v.optional(v.number()),
    undoneBy: v.optional(v.string()),
  })
    .index("by_canonical", ["canonicalSite", "canonicalId"])
    .index("by_at", ["at"]), // the digest: the steps a day took
  // Issue 30's explicit links (consolidates, supersedes) until one links table holds every kind.
  dreamLinks: defineTable({
    fromSite: v.string(),
    fromId: v.string(),
    toSite: v.string(),
    toId: v.string(),
    kind: v.string(),
    stepId: v.id("dreamSteps"),
  })
    .index("by_from", ["fromSite", "fromId"])
    .index("by_to", ["toSite", "toId"])
    .index("by_step", ["stepId"]),

  // The people memsync speaks to beyond the default chat (lib/routing.ts): the operator's config's
  // [[collaborators]], pushed by `memsync collaborators sync` (collaborators.ts's replace).
  collaborators: defineTable({
    name: v.string(),
    role: v.string(),
    telegramChatId: v.string(),
    telegramUserId: v.optional(v.string()), // for their button presses; default: a private chat's id
    permissions: v.array(v.string()),
    notifyOn: v.array(v.string()),
  }).index("by_name", ["name"]),

  sites: defineTable({
    name: v.string(),
    secretHash: v.string(), // sha256 hex of the secret; the secret itself is never stored
    createdAt: v.number(),
    disabled: v.optional(v.boolean()),
  }).index("by_name", ["name"]),

  // Which source feeds each site (sources.ts), one row a site. A table of its own, not fields on
  // `sites`: every public function reads its site's `sites` row to authenticate, so writing that
  // row on every claim would invalidate all of that site's calls in flight (optimistic concurrency),
  // and `sites` stays what only an admin writes.
  sources: defineTable({
    site: v.string(),
    instance: v.string(), // the sidecar's instance id
    machine: v.string(), // hash of host name and machine id
    host: v.string(),
    agentdbPath: v.string(),
    claimedAt: v.number(), // when this instance took the site
    lastSeenAt: v.number(), // its latest setSource
  }).index("by_site", ["site"]),

  // Retired (jobs.ts now keeps leases in jobLeases): nothing reads or writes it. Declared still so
  // that a deployment holding old claims accepts this schema; delete its documents, then this.
  jobClaims: defineTable({
    job: v.string(),
    slot: v.string(),
    claimant: v.string(),
    claimedAt: v.number(),
  }).index("by_job_slot", ["job", "slot"]),

  // One lease per (job, slot) of a global job run by a site (sync/policy/leases.py's rule, in jobs.ts).
  jobLeases: defineTable({
    job: v.string(),
    slot: v.string(),
    holder: v.string(),
    expiresAt: v.number(),
    done: v.boolean(), // finished, whatever the outcome: never run again
  }).index("by_job_slot", ["job", "slot"]),

  // Every run of a job, wherever it ran: a site's daemon, or "convex" for a cron (lib/cronRun.ts).
  jobRuns: defineTable({
    job: v.string(),
    slot: v.string(),
    site: v.string(),
    startedAt: v.number(),
    endedAt: nullable(v.number()),
    outcome: jobOutcome,
    summary: v.string(),
  })
    .index("by_started", ["startedAt"])
    .index("by_job_started", ["job", "startedAt"])
    .index("by_job_slot_site", ["job", "slot", "site"])
    .index("by_outcome", ["outcome", "site", "job"]),

  // The sync-health sweep's last judgement of each site, and the changes of judgement.
  healthStates: defineTable({
    site: v.string(),
    state: healthState,
    since: v.number(),
  }).index("by_site", ["site"]),
  healthTransitions: defineTable({
    site: v.string(),
    state: healthState,
    at: v.number(),
    silentForS: v.number(),
  }).index("by_at", ["at"]),

  // One daily digest a UTC day, as JSON text (its keys are ours, but its lists hold agents' words).
  digests: defineTable({
    day: v.string(),
    builtAt: v.number(),
    bodyJson: v.string(),
  }).index("by_day", ["day"]),

  // The fleet's use of its memories (uses.ts): one row per (event, memory), so that an event a
  // site delivers twice counts once; bySite is the site whose agent got the memory.
  uses: defineTable({
    useId: v.string(),
    sourceSite: v.string(),
    sourceId: v.string(),
    kind: v.string(), // lib/uses.ts USE_KINDS
    bySite: v.string(),
    agent: v.optional(v.string()),
    usedAt: v.number(),
  })
    .index("by_use", ["useId", "sourceSite", "sourceId"])
    .index("by_memory", ["sourceSite", "sourceId"]),

  // What a memory's uses add up to, and its pin: one document a memory used or pinned.
  useTotals: defineTable({
    sourceSite: v.string(),
    sourceId: v.string(),
    accessCount: v.number(),
    lastAccessed: v.optional(v.number()), // absent: pinned, never used
    byKindJson: v.string(), // kind -> count, as JSON text (kinds are not field names Convex checks)
    pinned: v.boolean(),
    pinnedBy: v.optional(v.string()),
    pinnedAt: v.optional(v.number()),
  }).index("by_memory", ["sourceSite", "sourceId"]),

  // A forgotten episode's key: a later push of it is refused, not re-inserted.
  tombstones: defineTable({
    sourceSite: v.string(),
    sourceId: v.string(),
    deletedAt: v.number(),
    changeSeq: v.optional(v.number()), // the forget's place in the change feed (see episodes)
    seedPointId: v.optional(v.string()), // an adopted episode's point id (lib/adoption.ts): indexes delete that one
    // Set while the archive file of this ISO week may still hold the forgotten episode: the forget
    // (or, should it die first, the next archive run) rewrites the file without it, then clears it.
    archiveWeek: v.optional(v.string()),
  })
    .index("by_site_source", ["sourceSite", "sourceId"])
    .index("by_changeSeq", ["changeSeq"])
    .index("by_archive_week", ["archiveWeek", "sourceSite"]),

  // The cold archive: one gzip JSON Lines file per (site, ISO week of ts, UTC) in file storage,
  // and its manifest. A stored blob counts only once a row here names it (archive.ts).
  archiveFiles: defineTable({
    site: v.string(),
    week: v.string(), // "2026-W08"
    storageId: v.id("_storage"),
    ...archiveManifest,
  })
    .index("by_site_week", ["site", "week"])
    .index("by_storage", ["storageId"]),

  // One row per archive run (the cleanup-old-episodes cron, or episodes:archiveOld by hand).
  archiveRuns: defineTable({
    at: v.number(),
    archived: v.number(), // episodes whose bodies left the hot table
    files: v.number(), // files written or rewritten
  }).index("by_at", ["at"]),

  // Named counters; "changeSeq" is the change feed's last seq (lib/changes.ts).
  counters: defineTable({
    name: v.string(),
    value: v.number(),
  }).index("by_name", ["name"]),

  alertStates: defineTable({
    key: v.string(),
    state: v.string(),
    since: v.number(),
  }).index("by_key", ["key"]),

  // One alert machine (lib/alertMachine.ts) per (signal, subject), stepped by the alerts cron.
  // `id` is a short hash of the key: Telegram's Snooze and Mute buttons carry it (64-byte limit).
  alertMachines: defineTable({
    key: v.string(), // "{signal}:{subject}"
    id: v.string(),
    signal: v.string(),
    subject: v.string(),
    state: v.union(v.literal("ok"), v.literal("late"), v.literal("down")),
    since: v.number(),
    streak: v.number(),
    downAt: v.number(),
    reminders: v.number(),
    notified: v.boolean(),
    valueAtDown: nullable(v.number()),
    snoozedUntil: v.number(),
    mutedUntil: v.number(),
  })
    .index("by_key", ["key"])
    .index("by_short_id", ["id"]),

  // Telegram messages to send or edit (lib/outbox.ts queues, telegram.ts delivers). A key names each
  // message once, so an alert, a digest or an approval's edit is queued once however often its cause
  // is seen. sentAt set without messageId: given up (or merged into the message it edits).
  telegramOutbox: defineTable({
    key: v.string(),
    kind: v.union(v.literal("send"), v.literal("edit")),
    text: v.string(),
    buttons: v.optional(v.array(v.array(v.object({ text: v.string(), data: v.string() })))),
    refKey: v.optional(v.string()), // edit: the key of the sent message to edit
    severity: v.union(v.literal("warning"), v.literal("critical")),
    notBefore: v.number(), // quiet hours, a 429's retry_after, a failure's backoff
    createdAt: v.number(),
    sentAt: v.optional(v.number()),
    messageId: v.optional(v.number()),
    attempts: v.number(),
    lastError: v.optional(v.string()),
    claimedUntil: v.optional(v.number()), // a deliver is sending it: no other may until then
    chatId: v.optional(v.string()), // a collaborator's chat (its key is lib/outboxKeys.ts's chatKey); none: the default chat
  })
    .index("by_key", ["key"])
    .index("by_pending", ["sentAt", "notBefore"]),

  // Telegram's pacing (telegram.ts's claim): the moment the next message handed out to a chat may
  // go, a pause after the one handed out before it to that chat, whichever deliver has it. One row
  // per chat (chatId: a collaborator's; none: the default chat).
  telegramPacing: defineTable({
    nextSendAt: v.number(),
    chatId: v.optional(v.string()),
  }),

  // Telegram updates already handled: Telegram retries a webhook it thinks failed, and a button
  // press must act once. The answer is kept to give the same one again.
  telegramUpdates: defineTable({
    updateId: v.number(),
    answer: v.string(),
    at: v.number(),
  })
    .index("by_update", ["updateId"])
    .index("by_at", ["at"]),
});
