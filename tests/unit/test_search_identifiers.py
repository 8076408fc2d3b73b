"""Tier: unit. The identifiers a query names and whether a memory holds one verbatim
(sync.identifiers), from tables."""

from __future__ import annotations

import pytest

from sync.identifiers import held, holds, identifiers, is_identifier, lookalikes, siblings


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # error codes, keys, flags
        ("E11000 duplicate key", ("E11000",)),
        ("what is ZQX_7781_A for?", ("ZQX_7781_A",)),
        ("deadlock 40P01 again", ("40P01",)),
        ("read ECONNRESET from the proxy", ("ECONNRESET",)),
        ("pod OOMKilled twice", ("OOMKilled",)),
        ("added --max-old-space-size=2048 to NODE_OPTIONS", ("--max-old-space-size", "NODE_OPTIONS")),
        ("GLIBC_2.34 not found", ("GLIBC_2.34",)),
        ("CVE-2024-3094 in xz", ("CVE-2024-3094",)),
        # functions
        ("parse_retry_after returns None", ("parse_retry_after",)),
        ("findOneAndUpdate with upsert", ("findOneAndUpdate",)),
        ("why does getUser() throw", ("getUser",)),
        ("os.path.join on Windows", ("os.path.join",)),
        ("JSONDecodeError on an empty body", ("JSONDecodeError",)),
        # files
        ("see next.config.js", ("next.config.js",)),
        ("cat /etc/nginx/nginx.conf", ("/etc/nginx/nginx.conf",)),
        ("edit ~/.ssh/config", ("~/.ssh/config",)),
        ("run ./deploy.sh", ("./deploy.sh",)),
        ("in src/app/page.tsx", ("src/app/page.tsx",)),
        # tickets, hosts, versions
        ("JIRA-4521 and #4521", ("JIRA-4521", "#4521")),
        ("db-1.prod.internal is down", ("db-1.prod.internal",)),
        ("ping 10.0.3.7 and 10.0.3.8:5432", ("10.0.3.7", "10.0.3.8:5432")),
        ("postgres on localhost:5432", ("localhost:5432",)),
        ("ranker-v7.2.1 or ranker-v7.2.11?", ("ranker-v7.2.1", "ranker-v7.2.11")),
        # each once, spelt as first named, in order
        ("E11000 then e11000 and E11000", ("E11000",)),
        # none: words, numbers, kinds of things, sentence punctuation
        ("ok go ahead and run the tests", ()),
        ("exit code 137 after the upgrade", ()),
        ("Docker on GitHub, a TypeError in the S3 bf16 CUDA path", ()),
        ("e.g. this, i.e. that.", ()),
        ("CI/CD and/or apps/web", ()),
        ("main() is fine", ()),
        ("/tmp", ()),
    ],
)
def test_the_identifiers_a_query_names(text: str, expected: tuple[str, ...]) -> None:
    assert identifiers(text) == expected


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("E11000", True),
        ("exp-4471", True),
        ("#12", True),
        ("#1", False),  # a list item, not a ticket
        ("--force", True),
        ("137", False),
        ("Docker", False),
        ("_", False),
        ("v2", False),
    ],
)
def test_what_counts_as_an_identifier(token: str, expected: bool) -> None:
    assert is_identifier(token) is expected


@pytest.mark.parametrize(
    ("text", "identifier", "expected"),
    [
        ("E11000 duplicate key error", "E11000", True),
        ("e11000 in lower case", "E11000", True),  # case folded
        ("code E110001", "E11000", False),  # inside a longer number
        ("flag ZQX_7781_A.log", "ZQX_7781_A", True),  # a dot after it ends it
        ("flag ZQX_7781_AB", "ZQX_7781_A", False),
        ("flag ZQX_7781_B", "ZQX_7781_A", False),
        ("MY_ZQX_7781_A", "ZQX_7781_A", False),  # an underscore before it: part of a longer one
        ("(exp-4471)", "exp-4471", True),
        ("exp-4471-rerun", "exp-4471", True),
        ("NODE_OPTIONS=--max-old-space-size=2048", "--max-old-space-size", True),
        ("see /etc/nginx/nginx.conf.", "/etc/nginx/nginx.conf", True),
        ("", "E11000", False),
        ("anything", "", False),
    ],
)
def test_holds_is_verbatim_and_not_inside_a_longer_identifier(text: str, identifier: str, expected: bool) -> None:
    assert holds(text, identifier) is expected


def test_held_keeps_the_order_named() -> None:
    assert held("E11000 then ZQX_7781_A", ["ZQX_7781_A", "E0277", "E11000"]) == ("ZQX_7781_A", "E11000")


@pytest.mark.parametrize(
    ("named", "other", "expected"),
    [
        ("ZQX_7781_A", "ZQX_7781_B", True),
        ("exp-4471", "exp-4417", True),
        ("ranker-v7.2.1", "ranker-v7.2.11", True),
        ("clicks_v12_eu", "clicks_v12_us", True),
        ("ZQX_7781_A", "zqx_7781_a", False),  # itself, case folded
        ("E11000", "E0277", False),
        ("exp-4471", "ranker-v7.2.1", False),
    ],
)
def test_siblings(named: str, other: str, expected: bool) -> None:
    assert siblings(named, other) is expected


@pytest.mark.parametrize(
    ("text", "named", "expected"),
    [
        ("ZQX_7781_B gates the new tax code", ["ZQX_7781_A"], ("ZQX_7781_B",)),
        ("ZQX_7781_A and ZQX_7781_B", ["ZQX_7781_A"], ()),  # holds the one named: no look-alike
        ("exp-4417 lowered NDCG", ["exp-4471", "E11000"], ("exp-4417",)),
        ("nothing of the family", ["ZQX_7781_A"], ()),
    ],
)
def test_lookalikes(text: str, named: list[str], expected: tuple[str, ...]) -> None:
    assert lookalikes(text, named) == expected
