"""Configuration: a TOML file, then the environment (``MEMSYNC_``, nested with ``__``), then ``.env``.

Unknown or invalid keys are refused with a message that names the key, and the process exits 78
(EX_CONFIG) so that systemd stops restarting it. Relative paths in the file are taken relative to
the file's own folder, so a config travels with the files it names.
"""

from __future__ import annotations

import io
import os
import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal

from dotenv import dotenv_values
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from daemon.alerts.policy.quiet_hours import parse_quiet_hours, zone
from daemon.alerts.policy.signal_names import SIGNAL_NAMES
from daemon.config_paths import (
    default_data_dir,
    env_file_for,
    journal_path_for,
    journal_state_path_for,
    lock_path_for,
    socket_path_for,
    state_path_for,
)
from daemon.schedule.policy.job_table import DEFAULT_JOBS, JOB_NAMES, JobSpec, Where, where, with_overrides
from daemon.telegram.policy.routing import notify_refusal, permission_refusal, presser_id
from sync.episode import Attribution
from sync.errors import ConfigError, PathProblem
from sync.policy.approvals import APPROVAL_TIMEOUTS_MS, DEFAULT_APPROVAL_TIMEOUT_MS
from sync.source.redaction import Redactor

ENV_PREFIX = "MEMSYNC_"
# Read by the CLI and the demo, not settings. MEMSYNC_ENV_FILE names the .env file to read instead
# of the one beside the config file: a service's per-site secrets file (launchd has no EnvironmentFile=).
_CLI_VARIABLES = {"MEMSYNC_CONFIG", "MEMSYNC_AGENTDB_GEN", "MEMSYNC_ENV_FILE"}
# Secrets: from the environment or .env only, never a config file that may be shared or committed.
ENV_ONLY = (
    ("backbone", "site_secret"),
    ("warm", "api_key"),
    ("warm", "qdrant_api_key"),
    ("warm", "rerank_api_key"),
    ("telegram", "bot_token"),
    ("telegram", "webhook_secret"),
    ("mcp", "token"),
)
# A site's name (contracts/site_names.json; Convex's sites.ts registers by the same rule). Matched
# whole (fullmatch): "$" would let a trailing newline through.
SITE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")
SITE_NAME_RULE = "use letters, digits, '.', '_' or '-' (at most 63), starting with a letter or digit"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SiteDefaults(_Section):
    """Who wrote an episode, when neither an AgentDB column nor its metadata says."""

    agent_name: str | None = Field(None, description="the agent's name (`agentName`)")
    agent_platform: str | None = Field(None, description='the agent\'s platform, e.g. "claude-code" (`agentPlatform`)')
    agent_interface: str | None = Field(None, description='how it is driven, e.g. "cli" (`agentInterface`)')
    parent_agent: str | None = Field(None, description="the agent that started it, for a sub-agent (`parentAgent`)")
    llm_provider: str | None = Field(None, description='the model\'s provider, e.g. "anthropic" (`llmProvider`)')
    llm_model: str | None = Field(None, description="the model (`llmModel`)")

    def attribution(self) -> Attribution:
        return Attribution(**self.model_dump())


class SiteSection(_Section):
    """This site: its name, and who wrote its episodes when the AgentDB file does not say."""

    name: str = Field(
        description="this site's name, the `sourceSite` of its episodes; one name, one source: another "
        "machine or AgentDB file under the same name is refused. " + SITE_NAME_RULE.capitalize()
    )
    defaults: SiteDefaults = Field(default_factory=SiteDefaults, description="attribution defaults (`[site.defaults]`)")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not SITE_NAME.fullmatch(value):
            raise ValueError(SITE_NAME_RULE)
        return value


class AgentDBSection(_Section):
    """The AgentDB file memsync tails. memsync only ever reads it."""

    path: Path = Field(
        description="the AgentDB file the site's agents write (their `AGENTDB_PATH`); it may not exist yet: "
        "the daemon waits for it (status is degraded while its folder does not exist either)"
    )
    poll_interval: float = Field(
        1.0, ge=0.05, le=60.0, description="seconds between stat polls of the file (file events usually wake it sooner)"
    )


class BackboneSection(_Section):
    """Where every site's episodes meet: the embedded hub (a SQLite file) or a Convex deployment."""

    kind: Literal["local", "convex"] = Field(
        "local", description="`local`: the embedded hub; `convex`: a Convex deployment (`url`, `site_secret`)"
    )
    path: Path | None = Field(
        None,
        description="local: the hub's file (unset: `<data_dir>/hub.db`); sites on one machine point at the same one",
    )
    busy_timeout_ms: int = Field(
        5000, ge=0, le=600_000, description="local: milliseconds to wait for another site's write to the hub"
    )
    url: str | None = Field(None, description="convex: the deployment's URL, `https://<deployment>.convex.cloud`")
    # The site's own secret, never the deploy key.
    site_secret: SecretStr | None = Field(
        None, description="convex: this site's secret, printed once by `sites:register` (only its SHA-256 is stored)"
    )
    timeout: float = Field(15.0, gt=0, le=300, description="convex: seconds to wait for the deployment's answer")
    shared_group: str | None = Field(
        None,
        description="local: a group whose members' sites share the hub: the hub's folder (give it one of its own) "
        "becomes that group's (2770) and the hub's files 0660, memsync's other files 0660 / 0770 in the user's own "
        "group. Unset: every file memsync creates is its user's only (0600 / 0700)",
    )

    @field_validator("shared_group")
    @classmethod
    def _a_group(cls, name: str | None) -> str | None:
        import grp

        if name is None:
            return None
        try:
            grp.getgrnam(name)
        except KeyError:
            raise ValueError(
                f"backbone.shared_group {name!r} is not a group on this machine: create it (`groupadd {name}`) and "
                "add each user whose memsync shares the hub, or remove the key to keep the hub private"
            ) from None
        return name

    @model_validator(mode="after")
    def _complete(self) -> BackboneSection:
        if self.shared_group is not None and self.kind != "local":
            raise ValueError("backbone.shared_group is for the embedded hub (backbone.kind = 'local') only")
        if self.kind == "convex":
            if not self.url:
                raise ValueError("backbone.url is required when backbone.kind = 'convex'")
            if self.site_secret is None or not self.site_secret.get_secret_value():
                raise ValueError(
                    "backbone.site_secret is required when backbone.kind = 'convex': "
                    "set MEMSYNC_BACKBONE__SITE_SECRET in the environment or .env"
                )
        return self


class StateSection(_Section):
    """The site's own state database (the sidecar)."""

    path: Path | None = Field(
        None,
        description="the sidecar: cursor, hashes, quarantine, conflicts (unset: `<data_dir>/<site>.state.db`); "
        "the site's lock file sits beside it",
    )


class SyncSection(_Section):
    """How the engine reads the AgentDB file and pushes its episodes."""

    batch_size: int = Field(200, ge=1, le=500, description="rows a push")
    window: int = Field(
        256,
        ge=0,
        description="ids behind the cursor re-checked for edits and reused ids (every pass that brings nothing new, "
        "at most once a second while an agent appends)",
    )
    full_check_interval: float = Field(
        60.0,
        ge=1.0,
        description="seconds between re-checks of every row, for edits to old episodes (in slices after new rows, "
        "only if the file changed)",
    )
    lag_warning: float = Field(60.0, gt=0, description="seconds of lag after which `status` says degraded")
    retry_max_wait: float = Field(
        30.0, gt=0, le=3600, description="the longest wait between retries of an unreachable backbone, in seconds"
    )


class WarmSection(_Section):
    """The search index (the warm layer): every synced episode, from every site, embedded into a
    hybrid (dense + BM25) Qdrant collection for `memsync search`, `context` and the MCP server."""

    enabled: bool = Field(True, description="index every synced episode, from every site, for `memsync search`")
    embedder: Literal["local", "gemini", "voyage"] = Field(
        "local",
        description="`local`: all-MiniLM-L6-v2 int8 ONNX, offline, 384 dims; `gemini`: gemini-embedding-001; "
        "`voyage`: voyage-3.5 (both need `api_key` and the `cloud` extra)",
    )
    model: str | None = Field(
        None, description="gemini or voyage: the model (unset: gemini-embedding-001 / voyage-3.5); not for `local`"
    )
    dims: int | None = Field(
        None,
        ge=1,
        le=4096,
        description="gemini or voyage: the vectors' size (unset: 768 / 1024; voyage takes 256, 512, 1024 or 2048)",
    )
    api_key: SecretStr | None = Field(None, description="the embedding provider's key")
    base_url: str | None = Field(None, description="the embedding provider's endpoint, for a proxy")
    store: Literal["edge", "qdrant"] = Field(
        "edge",
        description="`edge`: the Qdrant engine inside memsync's worker process (qdrant-edge); `qdrant`: a Qdrant "
        "server or Qdrant Cloud (`url`), which every site may share",
    )
    path: Path | None = Field(
        None, description="the edge store and the indexer's small files (unset: `<data_dir>/warm/<site>`)"
    )
    url: str | None = Field(None, description="qdrant: the server's or Qdrant Cloud's URL")
    qdrant_api_key: SecretStr | None = Field(None, description="qdrant: the server's API key")
    collection: str = Field(
        "agent_memory_hybrid",
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,100}$",
        description="the collection's name; `reindex` builds `<name>-<time>` and switches to it. With "
        '`store = "qdrant"` it is the alias every site goes through; a collection of that name memsync did '
        "not make is refused",
    )
    batch_size: int = Field(64, ge=1, le=500, description="episodes embedded and upserted together")
    duplicate_threshold: float = Field(
        0.95,
        gt=0,
        le=1.0,
        description="cosine at which an episode is linked to an earlier one as a near-duplicate (linked, never "
        "dropped; collapsed in results)",
    )
    fusion: Literal["learned", "relative", "rrf"] = Field(
        "learned",
        description="how search ranks the dense and BM25 lists: `learned` (a model over both lists' scores and "
        "ranks, the session, the length and the time the query names, trained leaving conversations out), "
        "`relative` (scaled scores, dense weighted 0.8 to 0.4 by how much of the query BM25's best hit holds) or "
        "`rrf` (Reciprocal Rank Fusion, k = 2)",
    )
    salience: bool = Field(
        True,
        description="search weighs each memory's salience from the fleet's use of it (handed to agents, opened by "
        "them, pinned), gated by similarity as the recency decay is: a close match is never moved",
    )
    # Convex: nothing wakes the look, and every look is a function call against the deployment's quota.
    catch_up_interval: float | None = Field(
        None,
        ge=0.1,
        le=3600,
        description="seconds between looks for other sites' episodes (unset: 30 on the hub, where a change to the "
        "hub file wakes the look at once; 10 on Convex)",
    )
    unload_after: float = Field(
        600.0,
        ge=0,
        description="seconds without embedding after which the search index's worker process lets the model go "
        "and exits; the next episode or search starts it again (about 1.2 s). 0: keep it loaded",
    )
    optimize_after: float = Field(
        30.0,
        ge=0,
        description="seconds after the search index's worker exits (idle) before the daemon builds the index's "
        "HNSW graph in a child process, once per batch of new episodes; a search or episode that arrives "
        "meanwhile stops it. Only the edge store (the Qdrant server builds its own). 0: never",
    )
    # Every site reaches the collections through the alias, so after the switch only requests already
    # in flight use the old one.
    retire_after: float = Field(
        3600.0,
        ge=0,
        allow_inf_nan=False,
        description="qdrant: seconds a collection a rebuild replaced is kept after the switch before it is "
        "dropped; set it alike on every site (the shortest wins)",
    )
    rerank_model: str = Field("rerank-2.5", description="the Voyage reranker `search --rerank` uses")
    rerank_api_key: SecretStr | None = Field(
        None, description='the reranker\'s key (unset: `api_key` when `embedder = "voyage"`)'
    )
    rerank_base_url: str | None = Field(None, description="the reranker's endpoint, for a proxy")
    socket: Path | None = Field(
        None,
        description="the daemon's control socket, which `search`, `context`, `reindex` and `mcp` use (unset: "
        "`<data_dir>/<site>.sock`; at most 100 bytes)",
    )

    @model_validator(mode="after")
    def _complete(self) -> WarmSection:
        if not self.enabled:
            return self
        if self.embedder != "local" and (self.api_key is None or not self.api_key.get_secret_value()):
            raise ValueError(
                f"warm.api_key is required when warm.embedder = {self.embedder!r}: "
                "set MEMSYNC_WARM__API_KEY in the environment or .env"
            )
        if self.embedder == "local" and (self.model is not None or self.dims is not None):
            raise ValueError("warm.model and warm.dims apply to gemini and voyage; the local model is fixed (384 dims)")
        if self.store == "qdrant" and not self.url:
            raise ValueError("warm.url is required when warm.store = 'qdrant'")
        return self


class JobOverride(_Section):
    """A job's schedule, when the default does not suit; a key left out keeps the default."""

    enabled: bool | None = Field(None, description="false: the job never runs here")
    every: float | None = Field(None, gt=0, description="seconds between fires (replaces the cron)")
    cron: str | None = Field(None, description="a crontab expression in UTC (replaces the interval)")
    grace: float | None = Field(None, ge=0, description="seconds a missed fire may still run late")
    lease: float | None = Field(None, gt=0, description="seconds before another site may take a slot over")


# The design's approval policy (sync/policy/approvals.py, in minutes here): how long a pending approval
# of each category waits before it expires; 0 approves it at once.
DEFAULT_APPROVAL_TIMEOUTS = {category: ms / 60_000 for category, ms in APPROVAL_TIMEOUTS_MS.items()}


# A duration or a count of minutes: a number, 0 or more, finite (as the Convex deployment reads the
# same settings, cloud_functions/lib/settings.ts).
_Amount = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class JobsSection(_Section):
    """The periodic jobs (`memsync jobs`) and the registry heartbeat. On Convex the deployment reads
    the same keys from its own environment (docs/guides/convex.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    enabled: bool = Field(True, description="run the scheduler and the registry heartbeat in the daemon")
    heartbeat_interval: float = Field(60.0, ge=1.0, description="seconds between this site's registry heartbeats")
    stale_after: float = Field(
        180.0,
        gt=0,
        description="seconds without a sign of life (a heartbeat; for an agent, also a new episode) before an agent "
        "or site is offline",
    )
    agent_retention_days: float = Field(
        30.0, gt=0, description="days without a sign of life after which an agent leaves the registry"
    )
    silent_after: float = Field(
        3600.0, gt=0, description="seconds without a sync before sync-health says a site is down"
    )
    archive_after_days: float = Field(
        90.0,
        gt=0,
        description="the retention: age (by the episode's `ts`) at which an episode goes to the cold archive",
    )
    approval_timeouts: dict[str, _Amount] = Field(
        default_factory=lambda: dict(DEFAULT_APPROVAL_TIMEOUTS),
        description="minutes a pending approval of each category waits before it expires (0: approved at once); "
        "the table replaces the default whole",
    )
    default_approval_timeout: float = Field(
        DEFAULT_APPROVAL_TIMEOUT_MS / 60_000, ge=0, description="minutes, for a category not in the table"
    )
    schedules: dict[str, JobOverride] = Field(
        default_factory=dict,
        description="a job's schedule, by its name: `[jobs.<name>]` tables (`memsync jobs` lists the names)",
    )

    @model_validator(mode="before")
    @classmethod
    def _job_tables(cls, data: Any) -> Any:
        """``[jobs.daily-digest]`` and the like are schedule overrides, named by their job."""
        if not isinstance(data, dict):
            return data
        moved = {k: v for k, v in data.items() if k in JOB_NAMES}
        if not moved:
            return data
        rest = {k: v for k, v in data.items() if k not in JOB_NAMES}
        return {**rest, "schedules": {**dict(rest.get("schedules") or {}), **moved}}

    @field_validator("schedules")
    @classmethod
    def _known_jobs(cls, value: dict[str, JobOverride]) -> dict[str, JobOverride]:
        unknown = sorted(set(value) - set(JOB_NAMES))
        if unknown:
            raise ValueError(f"no job named {', '.join(unknown)} (jobs: {', '.join(JOB_NAMES)})")
        return value

    def approval_timeout_ms(self, category: str) -> int:
        """How long a pending approval of ``category`` waits under this config's policy, in ms."""
        return int(self.approval_timeouts.get(category, self.default_approval_timeout) * 60_000)

    def specs(self) -> tuple[JobSpec, ...]:
        """Every job with this config's overrides; a bad cron expression is a ConfigError."""
        found = []
        for spec in DEFAULT_JOBS:
            o = self.schedules.get(spec.name)
            if o is None:
                found.append(spec)
                continue
            try:
                found.append(
                    with_overrides(
                        spec, enabled=o.enabled, every_s=o.every, cron=o.cron, grace_s=o.grace, lease_s=o.lease
                    )
                )
            except ValueError as exc:
                raise ConfigError(f"[jobs.{spec.name}]: {exc}") from None
        return tuple(found)


class TelegramSection(_Section):
    """Telegram: alerts, the morning digest and approval buttons. Off until `bot_token` and
    `chat_id` are set."""

    bot_token: SecretStr | None = Field(
        None, description="the bot's token, from @BotFather; Telegram is off without it"
    )
    chat_id: str | None = Field(
        None, description='the default chat (or group, "-100...") messages go to; it hears everything'
    )
    api_base: str = Field("https://api.telegram.org", description="a self-hosted Bot API server or a proxy")
    reviewers: list[int] = Field(
        default_factory=list,
        description="Telegram user ids whose Approve / Reject / Defer count (collaborators with `approve` count too)",
    )
    quiet_hours: str | None = Field(
        None,
        description="`HH:MM-HH:MM`: warnings (and normal-priority approvals) wait until it ends; critical alerts go",
    )
    timezone: str = Field("UTC", description="the quiet hours' time zone, e.g. `Europe/Paris`")
    poll: bool = Field(
        True,
        description="on the embedded hub, one daemon long-polls Telegram for button presses (off if a webhook does)",
    )
    webhook_secret: SecretStr | None = Field(None, description="for `memsync telegram webhook` (Convex)")

    @property
    def enabled(self) -> bool:
        return self.bot_token is not None and bool(self.bot_token.get_secret_value()) and bool(self.chat_id)

    @field_validator("chat_id", mode="before")
    @classmethod
    def _chat(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) else value

    @field_validator("quiet_hours")
    @classmethod
    def _quiet(cls, value: str | None) -> str | None:
        if value is not None:
            parse_quiet_hours(value)  # a ValueError names what is wrong
        return value

    @field_validator("timezone")
    @classmethod
    def _zone(cls, value: str) -> str:
        zone(value)
        return value

    @field_validator("api_base")
    @classmethod
    def _base(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"use an http:// or https:// URL, not {value!r}")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _complete(self) -> TelegramSection:
        if self.bot_token is not None and self.bot_token.get_secret_value() and not self.chat_id:
            raise ValueError("telegram.chat_id is required once MEMSYNC_TELEGRAM__BOT_TOKEN is set")
        return self


class Collaborator(_Section):
    """A person who hears from memsync in their own Telegram chat what `notify_on` names, and may
    decide approvals with the `approve` permission (`daemon/telegram/policy/routing.py` holds the vocabulary)."""

    name: str = Field(min_length=1, max_length=100, description="who they are, in messages and `--by`")
    role: str = Field("", description="what they do, for people reading the list")
    chat_id: str = Field(
        description='their private chat with the bot (their user id), or a group\'s ("-100...") or "@channel"'
    )
    user_id: str | None = Field(
        None, description="their Telegram user id, for their button presses (unset: `chat_id` when a private chat)"
    )
    permissions: list[str] = Field(default_factory=list, description="`approve`: they may decide approvals")
    notify_on: list[str] = Field(
        default_factory=list,
        description="what their chat hears: an alert's signal or `alerts`, `approval:<category>` or `approvals`, "
        "`digest`",
    )

    @field_validator("chat_id", "user_id", mode="before")
    @classmethod
    def _id(cls, value: Any) -> Any:
        return str(value) if isinstance(value, int) and not isinstance(value, bool) else value

    @field_validator("chat_id")
    @classmethod
    def _chat(cls, value: str) -> str:
        if not re.fullmatch(r"-?[0-9]{1,20}|@[A-Za-z0-9_]{5,32}", value):
            raise ValueError(f'use a Telegram chat id (a number, "-100..." for a group) or @channel, not {value!r}')
        return value

    @field_validator("user_id")
    @classmethod
    def _user(cls, value: str | None) -> str | None:
        if value is not None and not value.isdigit():
            raise ValueError(f"use a Telegram user id (a positive number), not {value!r}")
        return value

    @field_validator("permissions")
    @classmethod
    def _permissions(cls, value: list[str]) -> list[str]:
        for name in value:
            refused = permission_refusal(name)
            if refused is not None:
                raise ValueError(refused)
        return value

    @field_validator("notify_on")
    @classmethod
    def _notify_on(cls, value: list[str]) -> list[str]:
        for name in value:
            refused = notify_refusal(name)
            if refused is not None:
                raise ValueError(refused)
        return value

    @property
    def presser_id(self) -> str | None:
        """Who they are when they press a button (``routing.presser_id``)."""
        return presser_id(self.chat_id, self.user_id)


class AlertsSection(_Section):
    """When the alerts speak. They go to the log always, and to Telegram when it is configured."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    enabled: bool = Field(True, description="say alerts in the log (and on Telegram when configured)")
    reminders: list[_Amount] = Field(
        default_factory=lambda: [1.0, 4.0, 24.0], description="hours down after which a reminder goes out"
    )
    approval_lead: float = Field(
        10.0, ge=0, description="minutes before an unanswered approval's expiry at which it is said"
    )
    backbone_grace: float = Field(5.0, ge=0, description="minutes the backbone may be unreachable unsaid")
    # A flap shorter than the grace says nothing.
    grace: dict[str, _Amount] = Field(
        default_factory=dict,
        description="minutes a signal may stay bad before it is said, by signal: " + ", ".join(SIGNAL_NAMES),
    )

    @field_validator("grace")
    @classmethod
    def _signals(cls, value: dict[str, float]) -> dict[str, float]:
        unknown = sorted(set(value) - set(SIGNAL_NAMES))
        if unknown:
            raise ValueError(f"no signal named {', '.join(unknown)} (signals: {', '.join(SIGNAL_NAMES)})")
        return value


class PrivacySection(_Section):
    """What never leaves the site: secrets in episodes are replaced by a marker naming their kind
    before they are hashed and pushed (`sync/source/redaction.py`)."""

    redact: bool = Field(True, description="replace secrets by `[redacted:<kind>]` before an episode leaves the site")
    patterns: dict[str, str] = Field(
        default_factory=dict,
        description="the site's own secrets: kind -> regular expression (with a group, only the group is replaced)",
    )
    allow: list[str] = Field(default_factory=list, description="exact strings never redacted")

    @field_validator("patterns")
    @classmethod
    def _patterns(cls, value: dict[str, str]) -> dict[str, str]:
        for kind, pattern in value.items():
            if not re.fullmatch(r"[a-z0-9][a-z0-9-]{0,40}", kind):
                raise ValueError(f"pattern name {kind!r}: use lower-case letters, digits and '-'")
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"patterns.{kind} is not a regular expression: {exc}") from None
        return value

    def redactor(self) -> Redactor | None:
        return Redactor.configured(self.patterns, self.allow) if self.redact else None


class DreamSection(_Section):
    """The dream cycle (`memsync dream`, the nightly dream job): optionally, a language model writes
    one synthesis of each fold, recorded with the step beside its prompt and model. Off by default;
    the canonical memory is the fold's best member either way."""

    synthesis: Literal["off", "openai", "gemini"] = Field(
        "off",
        description="`openai`: any OpenAI-compatible chat endpoint (`dream.base_url`, e.g. a local Ollama's "
        "http://127.0.0.1:11434/v1); `gemini`: Gemini through google-genai (needs `dream.api_key`); `off`: none",
    )
    model: str = Field("", description="the model that writes the synthesis (e.g. `llama3.1`, `gemini-2.5-flash`)")
    base_url: str | None = Field(None, description="the endpoint's base URL (openai: required; gemini: optional)")
    api_key: SecretStr | None = Field(None, description="the model's key: set MEMSYNC_DREAM__API_KEY, never the file")

    @model_validator(mode="after")
    def _complete(self) -> DreamSection:
        if self.synthesis != "off" and not self.model:
            raise ValueError(f"dream.synthesis = {self.synthesis!r} needs dream.model")
        if self.synthesis == "openai" and not self.base_url:
            raise ValueError("dream.synthesis = 'openai' needs dream.base_url (e.g. http://127.0.0.1:11434/v1)")
        if self.synthesis == "gemini" and self.api_key is None:
            raise ValueError("dream.synthesis = 'gemini' needs a key: set MEMSYNC_DREAM__API_KEY")
        return self


class McpSection(_Section):
    """`memsync mcp --http`: the port it listens on (127.0.0.1 only) and the bearer token a client
    must send. Over stdio neither is used."""

    port: int = Field(8765, ge=1, le=65535, description="the port `memsync mcp --http` listens on (`--port` overrides)")
    token: SecretStr | None = Field(None, description="the bearer token `memsync mcp --http` requires")


class UiSection(_Section):
    """`memsync ui`: the web viewer on 127.0.0.1, and who its person is when they decide an approval."""

    port: int = Field(
        8766, ge=0, le=65535, description="the port `memsync ui` listens on, 127.0.0.1 only (0: any free one)"
    )
    user: str | None = Field(
        None,
        min_length=1,
        description="the `[[collaborators]]` name the viewer's person decides approvals as, under Telegram's reviewer "
        "rules (unset: approvals are shown, not decided)",
    )


class LogSection(_Section):
    """What memsync logs, and how."""

    level: Literal["debug", "info", "warning", "error"] = Field("info", description="the least severe line logged")
    format: Literal["auto", "json", "console"] = Field(
        "auto",
        description="`auto`: for `run`, JSON lines when stderr is not a terminal (journald), coloured text when it "
        "is; the other commands log only warnings and errors, as text",
    )


class Settings(BaseSettings):
    # extra="ignore" at the top level only because a .env file may hold other programs' variables;
    # load_settings refuses unknown top-level keys and MEMSYNC_ variables itself, by name.
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        env_file=".env",
        extra="ignore",
        frozen=True,
    )

    site: SiteSection
    agentdb: AgentDBSection
    backbone: BackboneSection = BackboneSection()
    state: StateSection = StateSection()
    sync: SyncSection = SyncSection()
    warm: WarmSection = WarmSection()
    jobs: JobsSection = JobsSection()
    telegram: TelegramSection = TelegramSection()
    alerts: AlertsSection = AlertsSection()
    privacy: PrivacySection = PrivacySection()
    mcp: McpSection = McpSection()
    dream: DreamSection = DreamSection()
    ui: UiSection = UiSection()
    log: LogSection = LogSection()
    collaborators: list[Collaborator] = Field(
        default_factory=list, description="`[[collaborators]]`: people memsync tells in their own Telegram chats"
    )
    data_dir: Path | None = Field(
        None, description="where the default paths go (unset: `$XDG_DATA_HOME/memsync` or `~/.local/share/memsync`)"
    )
    config_file: Path | None = Field(None, description="the file the settings came from (not a key)")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # The environment overrides the file (init carries the file's values); .env fills in last.
        return env_settings, dotenv_settings, init_settings

    @field_validator("collaborators")
    @classmethod
    def _one_each(cls, value: list[Collaborator]) -> list[Collaborator]:
        names = [c.name for c in value]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"collaborator {', '.join(map(repr, twice))} is listed twice: give each person one entry")
        return value

    @model_validator(mode="after")
    def _ui_user(self) -> Settings:
        names = [c.name for c in self.collaborators]
        if self.ui.user is not None and self.ui.user not in names:
            known = ", ".join(map(repr, names)) if names else "none: add a [[collaborators]] entry"
            raise ValueError(f"ui.user {self.ui.user!r} is no collaborator's name (collaborators: {known})")
        return self

    # -- derived paths ----------------------------------------------------------------------------
    @property
    def resolved_data_dir(self) -> Path:
        return self.data_dir if self.data_dir is not None else default_data_dir(os.environ)

    @property
    def hub_path(self) -> Path:
        return self.backbone.path or self.resolved_data_dir / "hub.db"

    @property
    def state_path(self) -> Path:
        return state_path_for(self.state.path, self.resolved_data_dir, self.site.name)

    @property
    def journal_path(self) -> Path:
        """The journal of saved memories: ``<data_dir>/<site>.journal.db``."""
        return journal_path_for(self.resolved_data_dir, self.site.name)

    @property
    def journal_state_path(self) -> Path:
        return journal_state_path_for(self.state_path)

    @property
    def catch_up_interval(self) -> float:
        if self.warm.catch_up_interval is not None:
            return self.warm.catch_up_interval
        return 10.0 if self.backbone.kind == "convex" else 30.0

    @property
    def warm_dir(self) -> Path:
        return self.warm.path or self.resolved_data_dir / "warm" / self.site.name

    @property
    def socket_path(self) -> Path:
        return socket_path_for(self.warm.socket, self.resolved_data_dir, self.site.name)

    @property
    def lock_path(self) -> Path:
        return lock_path_for(self.state_path)

    @property
    def alerts_path(self) -> Path:
        """The alerts' states and the Telegram outbox: beside the embedded hub, shared by its sites
        (so that one of them says each alert once); per site on Convex (the deployment says the
        fleet's)."""
        if self.backbone.kind == "local":
            return self.hub_path.with_name(f"{self.hub_path.stem}.alerts.db")
        return self.resolved_data_dir / f"{self.site.name}.alerts.db"


def _anchor(values: dict[str, Any], base: Path) -> dict[str, Any]:
    """Make the file's relative paths relative to the file's folder."""

    def fix(section: str, key: str) -> None:
        part = values.get(section)
        if isinstance(part, dict) and isinstance(part.get(key), str):
            path = Path(part[key]).expanduser()
            part[key] = os.path.normpath(path if path.is_absolute() else base / path)

    fix("agentdb", "path")
    fix("backbone", "path")
    fix("state", "path")
    fix("warm", "path")
    fix("warm", "socket")
    if isinstance(values.get("data_dir"), str):
        path = Path(values["data_dir"]).expanduser()
        values["data_dir"] = os.path.normpath(path if path.is_absolute() else base / path)
    return values


def _describe(error: dict[str, Any], model: type[BaseModel]) -> str:
    key = ".".join(str(part) for part in error["loc"])
    if error["type"] == "extra_forbidden":
        allowed = _allowed_keys(model, [str(p) for p in error["loc"][:-1]])
        hint = f" (allowed here: {', '.join(allowed)})" if allowed else ""
        return f"unknown key {key!r}{hint}"
    if error["type"] == "missing":
        return f"missing key {key!r}"
    return f"{key}: {error['msg']}"


def _allowed_keys(model: type[BaseModel], path: list[str]) -> list[str]:
    current: Any = model
    for part in path:
        field = current.model_fields.get(part) if hasattr(current, "model_fields") else None
        if field is None or not isinstance(field.annotation, type) or not issubclass(field.annotation, BaseModel):
            return []
        current = field.annotation
    return sorted(k for k in current.model_fields if k != "config_file")


def env_file(config: Path | None = None) -> Path | None:
    """The ``.env`` file settings read last for ``config`` (``config_paths.env_file_for``)."""
    return env_file_for(config, os.environ)


def _dotenv(config: Path | None) -> tuple[Path | None, dict[str, str]]:
    """The ``.env`` file that counts (``env_file_for`` says which) and its values; one that exists
    or is named but cannot be read is a PathProblem, not a silent nothing."""
    path = env_file(config)
    if path is None:
        return None, {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        named = "MEMSYNC_ENV_FILE" if os.environ.get("MEMSYNC_ENV_FILE") else "the .env file beside the config file"
        raise PathProblem.from_os_error(exc, named) from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"the .env file {path} is not UTF-8 text: {exc}") from None
    return path, {name: value or "" for name, value in dotenv_values(stream=io.StringIO(text)).items()}


def _variables(dotenv: tuple[Path | None, dict[str, str]]) -> dict[str, tuple[str, str]]:
    """MEMSYNC_ variables by name, each with where it was set (the environment wins over .env)."""
    found: dict[str, tuple[str, str]] = {}
    path, values = dotenv
    for name, value in values.items():
        found[name.upper()] = (value, f"the .env file {path}")
    for name, value in os.environ.items():
        found[name.upper()] = (value, "the environment")
    return {k: v for k, v in found.items() if k.startswith(ENV_PREFIX) and k not in _CLI_VARIABLES}


def _unknown_keys(values: dict[str, Any], where: str, variables: dict[str, tuple[str, str]]) -> list[str]:
    known = set(Settings.model_fields)
    problems = [
        f"unknown key {key!r} (allowed here: {', '.join(sorted(known - {'config_file'}))}) in {where}"
        for key in values
        if key not in known or key == "config_file"
    ]
    for name, (_value, origin) in sorted(variables.items()):
        section = name[len(ENV_PREFIX) :].split("__", 1)[0].lower()
        if section not in known or section == "config_file":
            allowed = ", ".join(f"{ENV_PREFIX}{k.upper()}__..." for k in sorted(known - {"config_file", "data_dir"}))
            problems.append(
                f"unknown variable {name} in {origin}: no setting {section!r} "
                f"(allowed: {allowed}, {ENV_PREFIX}DATA_DIR)"
            )
    return problems


def _origin(loc: tuple[Any, ...], where: str, variables: dict[str, tuple[str, str]]) -> str:
    """Where the value at ``loc`` came from: a variable (named) or the config file. A variable may
    hold a whole table or list (MEMSYNC_ALERTS__GRACE='{"offline": -1}' for alerts.grace.offline)."""
    for end in range(len(loc), 0, -1):
        name = ENV_PREFIX + "__".join(str(part).upper() for part in loc[:end])
        found = variables.get(name)
        if found:
            return f"{name} in {found[1]}"
    return where


def load_settings(config: Path | None) -> Settings:
    """Read the config file (if any) plus the environment; ConfigError names every bad key."""
    values: dict[str, Any] = {}
    where = "the environment"
    if config is not None:
        where = str(config)
        try:
            values = tomllib.loads(config.read_text(encoding="utf-8"))
        except OSError as exc:
            raise PathProblem.from_os_error(exc, "the config file, -c or MEMSYNC_CONFIG") from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {config} is not valid TOML: {exc}") from None
        except UnicodeDecodeError as exc:
            raise ConfigError(f"config file {config} is not UTF-8 text: {exc}") from None
    for section, key in ENV_ONLY:
        if isinstance(values.get(section), dict) and key in values[section]:
            raise ConfigError(
                f"{where}: {section}.{key} does not belong in a config file; "
                f"set MEMSYNC_{section.upper()}__{key.upper()} in the environment or a .env file"
            )
    dotenv = _dotenv(config)
    variables = _variables(dotenv)
    problems = _unknown_keys(values, where, variables)
    if problems:
        raise ConfigError(f"invalid configuration: {'; '.join(problems)}")
    if config is not None:
        values = _anchor(values, config.resolve().parent)
        values["config_file"] = str(config.resolve())
    try:
        settings = Settings(**values, _env_file=dotenv[0])
    except ValidationError as exc:
        site_variables = [
            name for name in variables if name.startswith((f"{ENV_PREFIX}SITE__", f"{ENV_PREFIX}AGENTDB__"))
        ]
        if config is None and not site_variables and any(e["type"] == "missing" for e in exc.errors()):
            # A forgotten -c, not a site configured by variables with one missing.
            raise ConfigError(
                "no config file given: pass the site's config with -c FILE, or set MEMSYNC_CONFIG"
            ) from None
        described = "; ".join(
            f"{_describe(dict(e), Settings)} (from {_origin(tuple(e['loc']), where, variables)})" for e in exc.errors()
        )
        raise ConfigError(f"invalid configuration: {described}") from None
    _refuse_what_convex_cannot_apply(settings, where)
    return settings


def _refuse_what_convex_cannot_apply(settings: Settings, source: str) -> None:
    """The settings the Convex deployment cannot honour (contracts/settings.json's "refused"): the
    schedules of the jobs its crons run, which crons.ts fixes at deploy time."""
    if settings.backbone.kind != "convex":
        return
    specs = {spec.name: spec for spec in DEFAULT_JOBS}
    crons = sorted(
        name
        for name in settings.jobs.schedules
        if where(specs[name], backbone="convex", store=settings.warm.store) is Where.CONVEX
    )
    if crons:
        tables = ", ".join(f"[jobs.{name}]" for name in crons)
        them = "that job" if len(crons) == 1 else "those jobs"
        raise ConfigError(
            f"{tables} in {source} cannot apply on Convex (backbone.kind = 'convex'): the deployment's crons "
            f"run {them} on the schedule cloud_functions/crons.ts gives, so remove {tables} or change crons.ts "
            "and deploy it"
        )
