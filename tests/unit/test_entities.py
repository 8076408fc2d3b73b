"""Tier: unit. A memory's entities and task key (sync.source.entities), from tables."""

from __future__ import annotations

import pytest

from sync.source.entities import ENTITIES_MAX, TASK_KEY_CHARS, entities, task_key, text_entities

# (text, entities it must name, normalised, in any order; words it must not name)
NAMED = [
    (
        "MongoServerError: E11000 duplicate key error on users.email_1",
        {"e11000", "mongoservererror", "users.email_1"},
        set(),
    ),
    ("read ECONNRESET from the upstream", {"econnreset"}, {"upstream", "read"}),
    ("the worker was OOMKilled, exit 137", {"exit 137", "oomkilled"}, {"137"}),
    ("the job exited with code 1 after the build", {"exit 1"}, set()),
    ("the pod's process exit status 143 on SIGTERM", {"exit 143", "sigterm"}, set()),
    ("nginx answered HTTP 502 Bad Gateway", {"http 502"}, {"502", "nginx"}),
    ("HTTP/1.1 429 Too Many Requests from the API", {"http 429"}, set()),
    ("SQLSTATE 40001 serialization failure", {"sqlstate 40001"}, {"sqlstate"}),
    ("psycopg raised SQLSTATE[23505]: unique violation", {"sqlstate 23505"}, set()),
    ("postgres error 40P01 deadlock detected", {"40p01"}, {"deadlock"}),
    ("edited src/app/page.tsx and next.config.js", {"src/app/page.tsx", "next.config.js"}, set()),
    ("the config lives in /etc/nginx/nginx.conf", {"/etc/nginx/nginx.conf"}, set()),
    ("run ./scripts/migrate.sh then ~/bin/deploy", {"./scripts/migrate.sh", "~/bin/deploy"}, set()),
    ("parse_retry_after drops the header", {"parse_retry_after"}, set()),
    ("call getUser() before render", {"getuser"}, set()),
    ("use findOneAndUpdate with upsert", {"findoneandupdate"}, set()),
    ("class UserRepository caches rows", {"userrepository"}, set()),
    ("PaymentService times out when Stripe is slow", {"paymentservice"}, {"stripe"}),
    ("We use TypeScript and GitHub Actions", set(), {"typescript", "github"}),
    ("raised in JSONDecodeError at load", {"jsondecodeerror"}, set()),
    ("tracked in JIRA-4521, see also #456", {"jira-4521", "#456"}, set()),
    ("fixed in PROJ-12 for the release", {"proj-12"}, set()),
    (
        "GET https://api.example.com/v1/users?id=3 failed",
        {"https://api.example.com/v1/users", "api.example.com"},
        {"id=3"},
    ),
    (
        "dsn postgres://app:hunter2@db.internal:5432/main",
        {"postgres://db.internal:5432/main", "db.internal:5432"},
        {"hunter2"},
    ),
    ("connect to db-1.prod.internal for the replica", {"db-1.prod.internal"}, set()),
    ("redis at 10.0.3.7:6379 refused", {"10.0.3.7:6379"}, set()),
    ("postgres on localhost:5432 is up", {"localhost:5432"}, set()),
    ("set MAX_POOL_SIZE to 20 and DATABASE_URL", {"max_pool_size", "database_url"}, set()),
    ("the flag FEAT_CHECKOUT_V2 is on", {"feat_checkout_v2"}, set()),
    ("key ZQX_7781_A rotated, not ZQX_7781_B", {"zqx_7781_a", "zqx_7781_b"}, set()),
    ("node --max-old-space-size=4096", {"--max-old-space-size"}, set()),
    ("deployed ranker-v7.2.1 to prod", {"ranker-v7.2.1"}, set()),
    ("The tests passed after we fixed it. Docker works now, 137 rows.", set(), {"137", "docker", "tests"}),
]


@pytest.mark.parametrize(("text", "named", "not_named"), NAMED)
def test_text_entities_names_a_memorys_identifiers(text: str, named: set[str], not_named: set[str]) -> None:
    found = text_entities(text)
    assert named <= set(found), (text, found)
    assert not (not_named & set(found)), (text, found)
    if not named:
        assert found == [], (text, found)


def test_entities_are_sorted_unique_and_read_from_every_text_field() -> None:
    fields = {
        "task": "Fix E11000 on signup",
        "input": "users.email_1 index",
        "output": "dropped the duplicate; E11000 gone",
        "critique": "see JIRA-77",
        "tags": ["ZQX_7781_A"],  # tags are not text: a tag names a kind, not a thing
        "success": True,
    }
    assert entities(fields) == ["e11000", "jira-77", "users.email_1"]


def test_entities_are_capped_keeping_the_first_named() -> None:
    names = [f"ERR_CODE_{n:03d}" for n in range(ENTITIES_MAX + 10)]
    found = entities({"task": "many", "output": " ".join(names)})
    assert len(found) == ENTITIES_MAX
    assert found == sorted(n.casefold() for n in names[:ENTITIES_MAX])


def test_entities_of_a_memory_without_text() -> None:
    assert entities({}) == []
    assert entities({"task": None, "output": 3}) == []


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("Fix the login bug", "fix the login bug."),
        ("Fix the  login\tbug", "FIX THE LOGIN BUG!"),
        ("Deploy 'api' to prod", "deploy api to prod"),
        ("\uff26\uff49\uff58 the bug", "Fix the bug"),  # full-width letters: the same task
    ],
)
def test_the_same_task_has_the_same_key(one: str, other: str) -> None:
    assert task_key(one) == task_key(other)
    assert len(task_key(one)) == TASK_KEY_CHARS


@pytest.mark.parametrize(
    ("one", "other"),
    [("Fix the login bug", "Fix the logout bug"), ("Deploy v1", "Deploy v2"), ("fix bug", "bug fix")],
)
def test_other_tasks_have_other_keys(one: str, other: str) -> None:
    assert task_key(one) != task_key(other)


@pytest.mark.parametrize("task", [None, "", "   ", "...", 7])
def test_no_task_no_key(task: object) -> None:
    assert task_key(task) == ""
