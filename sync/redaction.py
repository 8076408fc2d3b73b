"""Secrets never leave the site: before an episode is hashed and pushed, every secret in its text
fields and metadata is replaced by a marker naming its kind (``[redacted:aws-access-key]``). Pure.

The rules follow gitleaks' default rule set (the best-kept open catalogue of credential formats):
each kind a compiled pattern, most anchored on the vendor's fixed prefix (``AKIA``, ``ghp_``,
``xoxb-``, ``sk-ant-``, ``eyJ...``), so that a look-alike without it (a sha256, a UUID, an error code
such as ``0x8007001F``, a ticket id) is left alone; no entropy rule, which is what flags hashes.
detect-secrets was measured for this and not chosen (docs/design/privacy.md: 0.35 MB/s, about 116
3-KB episodes a second, 100 times slower than a backfill; it reports a GitHub token's value as
``ghp`` and a JWT without its signature, so its findings cannot be cut out of the text; and it
misses current OpenAI and Anthropic keys).

A site adds its own patterns (``privacy.patterns``, kind -> regex) and an allow-list
(``privacy.allow``: exact strings never redacted, e.g. a documented example key).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final


@dataclass(frozen=True, slots=True)
class Rule:
    kind: str
    pattern: re.Pattern[str]
    group: int = 0  # the part that is the secret (a URL's password, an assignment's value)
    # gitleaks' keywords: the pattern runs only on text holding one of them (lower-cased when
    # ``fold``); most text holds none, which is what makes redaction cheap. Empty: always run.
    keywords: tuple[str, ...] = ()
    fold: bool = False

    def may_match(self, text: str, folded: str) -> bool:
        if not self.keywords:
            return True
        haystack = folded if self.fold else text
        return any(k in haystack for k in self.keywords)


def _rule(kind: str, pattern: str, *keywords: str, group: int = 0, fold: bool = False) -> Rule:
    return Rule(kind, re.compile(pattern), group, keywords, fold)


# Order matters where kinds overlap: the more specific first (an Anthropic key is also "sk-...").
RULES: Final[tuple[Rule, ...]] = (
    _rule(
        "private-key",
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----[\s\S]*?(-----END[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----|\Z)",
        "PRIVATE KEY",
    ),
    _rule(
        "aws-access-key", r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b", "AKIA", "ASIA", "ABIA", "ACCA", "A3T"
    ),
    _rule(
        "aws-secret-key",
        r"(?i)aws.{0,20}?(?:secret|private).{0,20}?[\s'\"=:]+([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
        "aws",
        group=1,
        fold=True,
    ),
    _rule("github-token", r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b", "ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    _rule("github-token", r"\bgithub_pat_[A-Za-z0-9_]{60,255}\b", "github_pat_"),
    _rule("gitlab-token", r"\bglpat-[A-Za-z0-9_-]{20,}\b", "glpat-"),
    _rule("slack-token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}", "xox"),
    _rule("slack-webhook", r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9/_-]+", "hooks.slack.com"),
    _rule("anthropic-key", r"\bsk-ant-[A-Za-z0-9_-]{20,}", "sk-ant-"),
    _rule("openai-key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}", "sk-"),
    _rule("google-api-key", r"\bAIza[0-9A-Za-z_-]{35}", "AIza"),
    _rule("stripe-key", r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}", "_live_", "_test_"),
    _rule("sendgrid-key", r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}", "SG."),
    _rule("npm-token", r"\bnpm_[A-Za-z0-9]{36,}\b", "npm_"),
    _rule("pypi-token", r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}", "pypi-"),
    _rule("telegram-bot-token", r"\b\d{8,10}:AA[A-Za-z0-9_-]{30,40}\b", ":AA"),
    _rule("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", "eyJ"),
    # A password in a URL: scheme://user:PASSWORD@host
    _rule("url-password", r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:([^/\s@]+)@", "://", group=1),
    # password = "...", "api_key": "...", SECRET: ...  (the value, 6 characters or more)
    _rule(
        "password",
        r"(?i)\b(?:password|passwd|pwd|passphrase|secret|client_secret|api[_-]?key|access[_-]?token|auth[_-]?token)"
        r"\b[\"']?\s*[:=]\s*[\"']?(?!\[redacted:)([^\s\"',;]{6,})",
        "password",
        "passwd",
        "pwd",
        "passphrase",
        "secret",
        "api_key",
        "api-key",
        "apikey",
        "access_token",
        "access-token",
        "accesstoken",
        "auth_token",
        "auth-token",
        "authtoken",
        group=1,
        fold=True,
    ),
)
MARKER = "[redacted:{kind}]"
_MARKED = re.compile(r"^\[redacted:[a-z0-9-]+\]$")


@dataclass(frozen=True, slots=True)
class Redactor:
    rules: Sequence[Rule] = RULES
    allow: frozenset[str] = field(default_factory=frozenset)
    # Every rule's keywords, lower-cased: substring tests (C speed) say which rules could match a
    # text; most texts hold none, and then no pattern runs at all.
    _words: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _always: tuple[Rule, ...] = field(init=False, repr=False, compare=False)  # rules without keywords

    def __post_init__(self) -> None:
        object.__setattr__(self, "_words", tuple(sorted({k.lower() for r in self.rules for k in r.keywords})))
        object.__setattr__(self, "_always", tuple(r for r in self.rules if not r.keywords))

    def may_hold_secrets(self, text: str) -> bool:
        """Whether any rule could match somewhere in ``text`` (all of an episode's text at once:
        when not, none of its fields needs a look)."""
        lowered = text.lower()
        return bool(self._always) or any(w in lowered for w in self._words)

    @classmethod
    def configured(cls, patterns: Mapping[str, str], allow: Iterable[str]) -> Redactor:
        """The default rules, then the site's own (kind -> regex; a regex with a group redacts the
        group), never touching an allowed string. A malformed regex raises ValueError naming it."""
        own = []
        for kind, pattern in patterns.items():
            try:
                compiled = re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"privacy.patterns.{kind}: not a regular expression: {exc}") from None
            own.append(Rule(kind, compiled, 1 if compiled.groups else 0))
        return cls((*RULES, *own), frozenset(allow))

    def text(self, value: str, counts: Counter[str]) -> str:
        """``value`` with every secret replaced by its kind's marker; ``counts`` counts them by kind."""
        folded = value.lower()
        if not self._always and not any(w in folded for w in self._words):
            return value
        for rule in self.rules:
            if rule.may_match(value, folded):
                value = rule.pattern.sub(lambda m, r=rule: self._replace(m, r, counts), value)  # type: ignore[misc]
        return value

    def _replace(self, match: re.Match[str], rule: Rule, counts: Counter[str]) -> str:
        secret = match.group(rule.group)
        if not secret or secret in self.allow or _MARKED.match(secret):
            return match.group(0)
        counts[rule.kind] += 1
        start, end = match.start(rule.group) - match.start(0), match.end(rule.group) - match.start(0)
        whole = match.group(0)
        return whole[:start] + MARKER.format(kind=rule.kind) + whole[end:]

    def value(self, value: Any, counts: Counter[str]) -> Any:
        """Strings anywhere in a JSON value (metadata, tags), keys left as they are."""
        if isinstance(value, str):
            return self.text(value, counts)
        if isinstance(value, list):
            return [self.value(v, counts) for v in value]
        if isinstance(value, dict):
            return {k: self.value(v, counts) for k, v in value.items()}
        return value


REDACTED_FIELDS: Final = ("task", "input", "output", "critique", "tags", "metadata")


def redact_fields(redactor: Redactor, fields: Mapping[str, Any]) -> tuple[dict[str, Any], Counter[str]]:
    """The episode's fields with its text fields and metadata redacted, and what was found."""
    counts: Counter[str] = Counter()
    out = dict(fields)
    for name in REDACTED_FIELDS:
        if out.get(name) is not None:
            out[name] = redactor.value(out[name], counts)
    return out, counts
