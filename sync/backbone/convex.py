"""The Convex backbone: the same contract as the embedded hub, over Convex's HTTP API.

Not the ``convex`` PyPI client: it holds the GIL while it waits, has no timeout and retries network
errors forever (see docs/ARCHITECTURE.md). This is a plain httpx client with timeouts; retries are
the engine's one policy (``sync.retry``), driven by how each failure is classified here.

The site authenticates every call with its own secret (never the deployment's deploy key); the
functions in ``cloud_functions/`` check it against a stored hash. The secret is sent in the request
body, never in a URL, and never appears in a log line, an error message or ``status``.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

import httpx

from sync import http as http_policy
from sync.archive.manifest import ArchiveFile
from sync.backbone.base import (
    AgentBeat,
    AgentState,
    Approval,
    ArchiveCheck,
    ArchiveRun,
    Change,
    Forgotten,
    HealthTransition,
    JobRun,
    Outcome,
    PointRecord,
    PushItem,
    PushResult,
    SiteBeat,
    SiteCursor,
    SiteState,
    SourceRecord,
)
from sync.episode import EXPORT_FIELDS, canonical_json
from sync.errors import (
    BackboneAuthError,
    BackboneConflict,
    BackboneNotFound,
    BackboneRejected,
    BackboneUnavailable,
    ConfigError,
    MemsyncError,
)
from sync.leases import Claim

# Convex's limits: 16 MiB of arguments, 1 MiB a document, 8192 array elements; an upsert costs an
# index read a row, so a few hundred rows a call keeps a mutation well inside its budget.
MAX_BATCH_ROWS = 200
MAX_BATCH_BYTES = 8 * 1024 * 1024
MAX_EPISODE_BYTES = 900 * 1024  # a document is at most 1 MiB, with the backbone's own fields around
# episodes:changes pages and episodes:recordPoints batches: at most this many a call.
MAX_PAGE = 500
# agents:heartbeatSite's MAX_AGENT_BEATS: the agents one beat call carries.
MAX_AGENT_BEATS = 200

Kind = Literal["query", "mutation", "action"]


def _wire_agent(agent: AgentBeat) -> dict[str, Any]:
    wire: dict[str, Any] = {"agentName": agent.agent_name, "platform": agent.platform, "seenAt": agent.seen_at}
    if agent.interface is not None:
        wire["interface"] = agent.interface
    if agent.last_episode_at is not None:
        wire["lastEpisodeAt"] = agent.last_episode_at
    return wire


def classify(code: str | None, message: str) -> MemsyncError:
    """The exception for a function's error, by its ``errorData.code``, never by message text
    (production deployments redact messages)."""
    if code == "UNAUTHORIZED":
        return BackboneAuthError(f"convex refused this site's credentials: {message}")
    if code in {"INVALID", "TOO_LARGE"}:
        return BackboneRejected(f"convex rejected the request ({code}): {message}")
    if code == "CONFLICT":
        return BackboneConflict(message)
    if code == "NOT_FOUND":
        return BackboneNotFound(message)
    if code is None:
        # An uncaught error in a function, e.g. an argument that fails a validator. Permanent for
        # this request: the engine splits the batch to find the row that causes it.
        return BackboneRejected(f"convex function failed: {message}")
    return BackboneUnavailable(f"convex error {code}: {message}")


class ConvexBackbone:
    kind = "convex"
    max_batch_rows = MAX_BATCH_ROWS
    max_batch_bytes: int | None = MAX_BATCH_BYTES
    max_episode_bytes: int | None = MAX_EPISODE_BYTES

    def __init__(
        self,
        url: str,
        site: str,
        secret: str,
        *,
        timeout: float = 15.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not url.startswith(("https://", "http://")):
            raise ConfigError(f"backbone.url must be the deployment's URL (https://...), not {url!r}")
        self.url = url.rstrip("/")
        self.site = site
        self._secret = secret
        self.description = f"convex {self.url}"
        self._client = httpx.Client(
            base_url=self.url,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)),
            transport=transport,
            headers={"Convex-Client": "memsync-0.1.0"},
        )

    # -- the HTTP API ---------------------------------------------------------------------------
    def call(self, kind: Kind, path: str, args: Mapping[str, Any] | None = None) -> Any:
        """Run one public function as this site; its value, or a classified exception."""
        return _post(self._client, self.url, kind, path, {"site": self.site, "secret": self._secret, **(args or {})})

    # -- the backbone contract ------------------------------------------------------------------
    def push(self, items: Sequence[PushItem], cursor: int) -> list[PushResult]:
        value = self.call(
            "mutation",
            "episodes:bulkSyncEpisodes",
            {"cursor": cursor, "episodes": [_wire_episode(i) for i in items]},
        )

        return [
            PushResult(
                r["sourceId"], Outcome(r["outcome"]), r.get("remoteId"), _int(r.get("syncedAt")), r.get("reason")
            )
            for r in value["results"]
        ]

    def site_cursor(self) -> SiteCursor | None:
        value = self.call("query", "episodes:getCursor")
        if value is None:
            return None
        return SiteCursor(self.site, int(value["lastSyncedId"]), int(value["lastSyncedAt"]), int(value["totalSynced"]))

    def episodes(self, site: str | None = None, since_ms: int | None = None) -> Iterator[dict[str, Any]]:
        """This site's episodes (a site reads only its own), oldest first; ``since_ms`` is applied
        here (the deployment pages them in the order they were synced, not by ts)."""
        if site not in (None, self.site):
            return
        after: str | None = None
        while True:
            page = self.call("query", "episodes:listEpisodes", {"after": after, "limit": 500})
            for episode in page["episodes"]:
                if since_ms is None or (episode.get("ts") is not None and int(episode["ts"]) >= since_ms):
                    yield _exported(episode)
            after = page.get("next")
            if after is None:
                return

    def ping(self) -> None:
        self.call("query", "episodes:getCursor")

    def close(self) -> None:
        self._client.close()

    # -- registry and coordination --------------------------------------------------------------
    def heartbeat(
        self, agent_name: str, platform: str, interface: str | None = None, last_episode_at: int | None = None
    ) -> None:
        args: dict[str, Any] = {"agentName": agent_name, "platform": platform}
        if interface is not None:
            args["interface"] = interface
        if last_episode_at is not None:
            args["lastEpisodeAt"] = last_episode_at
        self.call("mutation", "agents:heartbeat", args)

    def heartbeat_site(self, beat: SiteBeat, agents: Sequence[AgentBeat] = ()) -> None:
        """One call a beat; only a beat with more agents than a call carries (a daemon's first beat
        after a start, say) takes more, each repeating the site's figures."""
        site = {
            "version": beat.version,
            "host": beat.host,
            "pid": beat.pid,
            "lagS": beat.lag_s,
            "backlog": beat.backlog,
            "indexState": beat.index_state,
            "quarantined": beat.quarantined,
            "conflicts": beat.conflicts,
            "redacted": beat.redacted,
        }
        start = 0
        while True:
            chunk = [_wire_agent(a) for a in agents[start : start + MAX_AGENT_BEATS]]
            self.call("mutation", "agents:heartbeatSite", {**site, **({"agents": chunk} if chunk else {})})
            start += MAX_AGENT_BEATS
            if start >= len(agents):
                return

    def sites(self) -> list[SiteState]:
        return [
            SiteState(
                r["site"],
                _int(r.get("lastHeartbeat")),
                bool(r["online"]),
                r.get("version"),
                r.get("host"),
                _int(r.get("pid")),
                _float(r.get("lagS")),
                _int(r.get("backlog")),
                r.get("indexState"),
                _int(r.get("cursor")),
                _int(r.get("lastSyncAt")),
                int(r["quarantined"]),
                int(r["conflicts"]),
                r.get("health"),
                _int(r.get("totalSynced")),
                int(r.get("redacted") or 0),
            )
            for r in self.call("query", "agents:sites")
        ]

    def agents(self, all_sites: bool = False) -> list[AgentState]:
        rows = self.call("query", "agents:list", {"allSites": all_sites})
        return sorted(
            (
                AgentState(
                    r["agentName"],
                    r["platform"],
                    r["status"],
                    int(r["lastHeartbeat"]),
                    r["site"],
                    r.get("interface"),
                    _int(r.get("lastEpisodeAt")),
                )
                for r in rows
            ),
            key=lambda a: (a.site, a.agent_name),
        )

    # -- job leases and runs ----------------------------------------------------------------------
    def claim_job(self, job: str, slot: str, lease_ms: int) -> Claim:
        value = self.call("mutation", "jobs:claimJob", {"job": job, "slot": slot, "leaseMs": lease_ms})
        return Claim(value["claim"])

    def finish_job(self, job: str, slot: str, outcome: str, summary: str) -> None:
        self.call("mutation", "jobs:finishJob", {"job": job, "slot": slot, "outcome": outcome, "summary": summary})

    def record_run(self, job: str, slot: str, outcome: str, summary: str, started_at: int, ended_at: int) -> None:
        self.call(
            "mutation",
            "jobs:recordRun",
            {
                "job": job,
                "slot": slot,
                "outcome": outcome,
                "summary": summary,
                "startedAt": started_at,
                "endedAt": ended_at,
            },
        )

    def job_runs(self, job: str | None = None, limit: int = 50) -> list[JobRun]:
        args: dict[str, Any] = {"limit": max(0, min(limit, MAX_PAGE))}
        if job is not None:
            args["job"] = job
        return [
            JobRun(
                r["job"],
                r["slot"],
                r["site"],
                int(r["startedAt"]),
                _int(r.get("endedAt")),
                r["outcome"],
                r["summary"],
            )
            for r in self.call("query", "jobs:runs", args)
        ]

    def digest(self, day: str) -> dict[str, Any] | None:
        value = self.call("query", "digest:get", {"day": day})
        return None if value is None else dict(value)

    def build_today_digest(self, day: str) -> dict[str, Any]:
        # The deployment's clock decides what today is; another day is refused (BackboneRejected).
        return dict(self.call("mutation", "digest:buildToday", {"day": day}))

    def health_transitions(self, since_ms: int) -> list[HealthTransition]:
        return [
            HealthTransition(r["site"], r["state"], int(r["at"]), float(r["silentForS"]))
            for r in self.call("query", "health:transitions", {"sinceMs": since_ms})
        ]

    # -- approvals and forgetting ---------------------------------------------------------------
    def create_approval(
        self,
        *,
        agent_name: str,
        action_type: str,
        priority: str,
        reviewers: Sequence[str],
        expires_at: int,
        timeout_ms: int | None = None,
        cost_usd: float | None = None,
        tests_passed: bool | None = None,
        summary: str | None = None,
        source_id: str | None = None,
    ) -> str:
        args: dict[str, Any] = {
            "agentName": agent_name,
            "actionType": action_type,
            "priority": priority,
            "reviewers": list(reviewers),
            "expiresAt": expires_at,
        }
        if timeout_ms is not None:
            args["timeoutMs"] = timeout_ms
        if cost_usd is not None:
            if not math.isfinite(cost_usd):  # JSON cannot carry it; the deployment rejects a negative one
                raise BackboneRejected(f"cost_usd must be a finite amount, not negative, got {cost_usd}")
            args["costUsd"] = cost_usd
        if tests_passed is not None:
            args["testsPassed"] = tests_passed
        if summary is not None:
            args["summary"] = summary
        if source_id is not None:
            args["sourceId"] = source_id
        value = self.call("mutation", "approvals:create", args)
        return str(value["approvalId"])

    def resolve_approval(self, approval_id: str, status: str, by: str) -> str:
        value = self.call("mutation", "approvals:resolve", {"approvalId": approval_id, "status": status, "by": by})
        return str(value["status"])

    def defer_approval(self, approval_id: str, by: str, timeout_ms: int | None = None) -> Approval:
        # The deployment defers by its own policy table (cloud_functions/approvals.ts), which is
        # also what its expiry cron runs with: ``timeout_ms`` is the hub's knob.
        self.call("mutation", "approvals:defer", {"approvalId": approval_id, "by": by})
        found = self.approval(approval_id)
        if found is None:
            raise BackboneNotFound(f"no approval {approval_id!r}")
        return found

    def approval(self, approval_id: str) -> Approval | None:
        value = self.call("query", "approvals:get", {"approvalId": approval_id})
        return None if value is None else _approval(value)

    def approvals(self, status: str | None = None, all_sites: bool = False) -> list[Approval]:
        args: dict[str, Any] = {"allSites": all_sites}
        if status is not None:
            args["status"] = status
        rows = self.call("query", "approvals:list", args)
        return [_approval(r) for r in sorted(rows, key=lambda r: float(r["_creationTime"]))]

    def send_digest(self) -> str:
        """Have the deployment send its latest stored digest to Telegram now; the day it covers."""
        return str(self.call("mutation", "digest:send", {})["day"])

    def forget(self, source_id: str) -> Forgotten:
        """Hot or archived: the deployment deletes it, tombstones it, and rewrites its week's
        archive file without it (an action: file storage is written by actions only)."""
        return _forgotten(self.call("action", "episodes:forget", {"sourceId": source_id}))

    # -- the cold archive (the deployment's cleanup-old-episodes cron writes it) ---------------------
    def archive_files(
        self, site: str | None = None, since_ms: int | None = None, until_ms: int | None = None
    ) -> list[ArchiveFile]:
        """Every site's manifests (they hold no episode text), or ``site``'s."""
        return [_archive_file(r) for r in self.call("query", "archive:files", _range(site, since_ms, until_ms))]

    def verify_archive(
        self, site: str | None = None, since_ms: int | None = None, until_ms: int | None = None
    ) -> list[ArchiveCheck]:
        rows = self.call("action", "archive:verify", _range(site, since_ms, until_ms))
        return [ArchiveCheck(_archive_file(r["file"]), r.get("problem")) for r in rows]

    def restore_archive(self, site: str | None = None, since_ms: int | None = None, until_ms: int | None = None) -> int:
        """This site's archived episodes come back (a site's secret restores only its own)."""
        if site not in (None, self.site):
            return 0
        return int(self.call("action", "archive:restore", _range(None, since_ms, until_ms))["restored"])

    def archived_episodes(self, site: str | None = None) -> Iterator[dict[str, Any]]:
        """This site's archived episodes (a site reads only its own), with ``archived: true``."""
        if site not in (None, self.site):
            return
        cursor: str | None = None
        while True:
            page = self.call("action", "archive:episodes", {"cursor": cursor, "limit": MAX_PAGE})
            for episode in page["episodes"]:
                yield _exported(episode)
            cursor = page.get("next")
            if cursor is None:
                return

    def archived_records(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
        """Any site's archived episodes by (site, source id), for a search index that never indexed
        them (the change feed gives only ``archived: true, episode: None``): the file copy of each
        key archived now with the row's content, as exported, with ``archived: true``. Keys hot,
        unknown or not in their file are absent. 500 keys a call; keys an answer had no room for
        (``unread``) are asked again."""
        wanted = list(dict.fromkeys((str(site), str(source_id)) for site, source_id in keys))
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for start in range(0, len(wanted), 500):
            pending: list[dict[str, str]] = [{"sourceSite": s, "sourceId": i} for s, i in wanted[start : start + 500]]
            while pending:
                answer = self.call("action", "archive:records", {"keys": pending})
                for record in answer["records"]:
                    out[(str(record["sourceSite"]), str(record["sourceId"]))] = _exported(record)
                unread = list(answer.get("unread") or [])
                if unread and not answer["records"]:  # the deployment promises progress; never loop
                    raise BackboneRejected("archive:records returned nothing and left keys unread")
                pending = unread
        return out

    def archived_counts(self, site: str | None = None) -> dict[tuple[str, str], int] | None:
        """Each file's archived keys counted by the deployment, a week at a time (as verify reads
        them): one action for every file."""
        rows = self.call("action", "archive:counts", _range(site, None, None))
        return {(str(r["site"]), str(r["week"])): int(r["archived"]) for r in rows}

    def last_archive_run(self) -> ArchiveRun | None:
        value = self.call("query", "archive:lastRun")
        return None if value is None else ArchiveRun(int(value["at"]), int(value["archived"]), int(value["files"]))

    # -- one source per site --------------------------------------------------------------------
    def source_of(self) -> SourceRecord | None:
        value = self.call("query", "sources:getSource")
        return None if value is None else _source(value)

    def set_source(self, record: SourceRecord, *, expected: str | None) -> bool:
        value = self.call(
            "mutation",
            "sources:setSource",
            {
                "expected": expected,
                "instance": record.instance,
                "machine": record.machine,
                "host": record.host,
                "agentdbPath": record.agentdb_path,
            },
        )
        return bool(value["claimed"])

    # -- the warm layer's feed ------------------------------------------------------------------
    def changes(self, after: int, limit: int) -> list[Change]:
        """Every site's changes after ``after``. At most 500 a call, and fewer when episodes are large
        (a Convex query reads at most 16 MiB): only an empty list means the caller has caught up."""
        rows = self.call("query", "episodes:changes", {"after": after, "limit": min(limit, MAX_PAGE)})
        return [
            Change(
                int(r["seq"]),
                r["sourceSite"],
                r["sourceId"],
                None if r["episode"] is None else _exported(r["episode"]),
                r.get("qdrantPointId"),
                bool(r.get("archived", False)),
            )
            for r in rows
        ]

    def feed_end(self) -> int:
        return int(self.call("query", "episodes:feedEnd", {}))

    def record_point_ids(self, records: Sequence[PointRecord]) -> int:
        recorded = 0
        for start in range(0, len(records), MAX_PAGE):
            items = [_wire_point(r) for r in records[start : start + MAX_PAGE]]
            recorded += int(self.call("mutation", "episodes:recordPoints", {"items": items})["recorded"])
        return recorded


class ConvexOperator:
    """The operator's hand on the deployment, with its deploy key (``Authorization: Convex <key>``,
    admin: it may call internal functions): forgetting any site's episode, which a site's own secret
    cannot. The key is never in a message, a log line or this object's repr."""

    def __init__(
        self, url: str, deploy_key: str, *, timeout: float = 30.0, transport: httpx.BaseTransport | None = None
    ) -> None:
        if not url.startswith(("https://", "http://")):
            raise ConfigError(f"the deployment's URL must be https://..., not {url!r}")
        self.url = url.rstrip("/")
        self._client = httpx.Client(
            base_url=self.url,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)),
            transport=transport,
            headers={"Convex-Client": "memsync-0.1.0", "Authorization": f"Convex {deploy_key}"},
        )

    def __repr__(self) -> str:
        return f"ConvexOperator({self.url!r})"

    def call(self, kind: Kind, path: str, args: Mapping[str, Any]) -> Any:
        """Run any function (internal ones too) as the admin; its value, or a classified exception."""
        return _post(self._client, self.url, kind, path, dict(args))

    def forget(self, site: str, source_id: str) -> Forgotten:
        """Forget ``site``'s episode ``source_id``, hot or archived, as the site's own forget does."""
        return _forgotten(self.call("action", "episodes:forgetAny", {"sourceSite": site, "sourceId": source_id}))

    def close(self) -> None:
        self._client.close()


def _post(client: httpx.Client, url: str, kind: Kind, path: str, args: dict[str, Any]) -> Any:
    """One call of Convex's HTTP API: its value, or a classified exception (messages name the
    function and the URL, never a credential)."""
    body = {"path": path, "args": args, "format": "json"}
    try:
        response = client.post(f"/api/{kind}", json=body)
    except httpx.TimeoutException:
        raise BackboneUnavailable(f"convex {path}: no answer within the timeout") from None
    except httpx.HTTPError as exc:
        raise BackboneUnavailable(f"convex {path}: {type(exc).__name__}: {exc}") from None
    # Convex answers 200 for both outcomes; its own client also takes 560 as "function failed".
    if response.status_code in (200, 560):
        try:
            payload = response.json()
        except ValueError:
            raise BackboneUnavailable(f"convex {path}: the answer is not JSON") from None
        if payload.get("status") == "success":
            return payload.get("value")
        data = payload.get("errorData")
        code = data.get("code") if isinstance(data, dict) else None
        message = (data.get("message") if isinstance(data, dict) else None) or payload.get("errorMessage") or ""
        raise classify(code if isinstance(code, str) else None, f"{path}: {message}")
    # Every other status means what sync.http says it means, for every service memsync calls.
    verdict = http_policy.classify(response.status_code)
    if verdict is http_policy.Verdict.TRANSIENT:
        wait = http_policy.retry_after(response.headers.get("retry-after"), time.time())
        raise BackboneUnavailable(f"convex {path}: HTTP {response.status_code}", wait)
    if verdict is http_policy.Verdict.AUTH:
        raise BackboneAuthError(f"convex {path}: HTTP {response.status_code}")
    # Not a row's fault (that would be a function error): the URL or the deployment is wrong.
    raise ConfigError(
        f"convex {path}: HTTP {response.status_code} from {url}: is this the deployment "
        "URL, with cloud_functions deployed?"
    )


def _forgotten(value: Mapping[str, Any]) -> Forgotten:
    week = value.get("archiveWeek")
    return Forgotten(bool(value["deleted"]), None if week is None else str(week))


def _range(site: str | None, since_ms: int | None, until_ms: int | None) -> dict[str, Any]:
    """The archive functions' range arguments: an absent one is left out (Convex refuses null)."""
    args: dict[str, Any] = {}
    if site is not None:
        args["ofSite"] = site
    if since_ms is not None:
        args["sinceMs"] = since_ms
    if until_ms is not None:
        args["untilMs"] = until_ms
    return args


def _archive_file(r: Mapping[str, Any]) -> ArchiveFile:
    return ArchiveFile(
        site=r["site"],
        week=r["week"],
        count=int(r["count"]),
        sha256=r["sha256"],
        bytes=int(r["bytes"]),
        first_id=r["firstId"],
        last_id=r["lastId"],
        from_ts=int(r["fromTs"]),
        to_ts=int(r["toTs"]),
        written_at=int(r["writtenAt"]),
        location=str(r["storageId"]),
    )


def _approval(r: Mapping[str, Any]) -> Approval:
    return Approval(
        str(r["_id"]),
        r["agentName"],
        r["actionType"],
        r["status"],
        r["priority"],
        tuple(r["reviewers"]),
        int(r["expiresAt"]),
        r.get("resolvedBy"),
        None if r.get("costUsd") is None else float(r["costUsd"]),
        r.get("testsPassed"),
        site=str(r.get("site", "")),
        summary=r.get("summary"),
        source_id=r.get("sourceId"),
        created_at=int(r.get("createdAt") or r.get("_creationTime") or 0),
        resolved_at=_int(r.get("resolvedAt")),
        defer_count=int(r.get("deferCount") or 0),
    )


def _wire_episode(item: PushItem) -> dict[str, Any]:
    """Metadata travels as JSON text: Convex refuses object keys that start with '$' or are not
    ASCII, and agents' metadata may have any keys (and integers beyond 2^53)."""
    fields = {k: v for k, v in item.fields.items() if k != "metadata"}
    fields["metadataJson"] = canonical_json(item.fields.get("metadata") or {}).decode()
    return {
        "sourceId": item.source_id,
        "identityHash": item.identity_hash,
        "contentHash": item.content_hash,
        "fields": fields,
    }


def _wire_point(record: PointRecord) -> dict[str, str]:
    return {
        "sourceSite": record.site,
        "sourceId": record.source_id,
        "qdrantPointId": record.point_id,
        "contentHash": record.content_hash,
    }


def _source(value: Mapping[str, Any]) -> SourceRecord:
    return SourceRecord(
        value["instance"],
        value["machine"],
        value["host"],
        value["agentdbPath"],
        int(value["claimedAt"]),
        int(value["lastSeenAt"]),
    )


def _exported(episode: Mapping[str, Any]) -> dict[str, Any]:
    """As the hub exports it: the documented fields in order, then ``approvalStatus`` only for an
    episode an approval is about, and ``archived: true`` only for an archived episode."""
    record = dict(episode)
    text = record.get("metadataJson")
    if isinstance(text, str):
        record["metadata"] = json.loads(text)
    out = {name: record.get(name) for name in EXPORT_FIELDS}
    if record.get("approvalStatus") is not None:
        out["approvalStatus"] = record["approvalStatus"]
    if record.get("archived") is True:
        out["archived"] = True
    return out


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _float(value: Any) -> float | None:
    return None if value is None else float(value)
