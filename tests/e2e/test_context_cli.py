"""``memsync context`` as the agents' hooks run it: a child process fed each tool's documented stdin,
through a real daemon (real AgentDB file, real index), and against everything that can go wrong
(no daemon, one that never answers, a bad config, a stdin that is not the tool's): exit 0 always,
nothing on stdout but the tool's JSON, one sentence on stderr."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import AgentProcess, SiteFiles, episode, wait_for, wait_started, warm_section

from daemon.context.compose import CLOSE, LATEST, MEMORIES, OPEN
from daemon.context.hook import CAPS, POINTER, TOOLS
from sync.source.types import MEMORY_TYPES

HOOKS = Path(__file__).parents[1] / "data" / "hooks"
PROMPT_EVENT = {"claude-code": "UserPromptSubmit", "codex": "UserPromptSubmit", "gemini": "BeforeAgent"}
HEAVY = ("pydantic", "pydantic_settings", "rich", "structlog", "numpy", "httpx", "onnxruntime", "tenacity", "mcp")
REF = re.compile(r"\[(\w+#\d+) ·")


def stdin_for(tool: str, event: str, cwd: Path, **changes: object) -> str:
    data = json.loads((HOOKS / f"{tool}.{event}.json").read_text(encoding="utf-8"))
    return json.dumps({**data, "cwd": str(cwd), **changes})


def hook(
    tool: str, config: Path | None, stdin: str, *extra: str, importtime: bool = False
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, *(["-X", "importtime"] if importtime else []), "-m", "daemon", "context", "--for", tool]
    return subprocess.run(
        [*argv, *(["-c", str(config)] if config else []), *extra],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def said(done: subprocess.CompletedProcess[str]) -> list[str]:
    """stderr's lines, without -X importtime's."""
    return [line for line in done.stderr.splitlines() if not line.startswith("import time:")]


def warm(tmp_path: Path, short_dir: Path, name: str = "laptop") -> str:
    return warm_section(tmp_path, short_dir, name)


@pytest.fixture
def silent_socket(short_dir: Path) -> Iterator[Path]:
    """A Unix socket that accepts every connection and never says a word."""
    path = short_dir / "silent.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield path
    stop.set()
    thread.join(10)
    for conn in held:
        conn.close()
    server.close()


@pytest.mark.parametrize("tool", TOOLS)
def test_a_daemon_that_never_answers_costs_the_agent_nothing(
    tool: str, site_files: Callable[..., SiteFiles], silent_socket: Path, tmp_path: Path
) -> None:
    warm_table = f'path = "{tmp_path / "warm"}"\nsocket = "{silent_socket}"\n'
    site = site_files("laptop", warm=warm_table)
    done = hook(tool, site.config, stdin_for(tool, PROMPT_EVENT[tool], tmp_path), "--timeout", "1")
    assert done.returncode == 0
    assert done.stdout == ("{}\n" if tool == "gemini" else "")
    lines = said(done)
    assert len(lines) == 1, lines
    assert "gave up after 1s" in lines[0]


@pytest.mark.parametrize(
    ("case", "named"),
    [
        ("no daemon", "no daemon is listening"),
        ("bad config", "'sink'"),
        ("missing config", "config"),
        ("not json", "not JSON"),
        ("index off", "search index is off"),
        ("bad budget", "--budget-chars must be at least 1"),
        ("unknown flag", "arguments not understood"),
    ],
)
@pytest.mark.parametrize("tool", TOOLS)
def test_whatever_goes_wrong_the_hook_exits_0_and_says_why_in_one_sentence(
    tool: str, case: str, named: str, site_files: Callable[..., SiteFiles], short_dir: Path, tmp_path: Path
) -> None:
    site = site_files("laptop", warm=None if case == "index off" else warm(tmp_path, short_dir))
    config: Path | None = site.config
    stdin = stdin_for(tool, PROMPT_EVENT[tool], tmp_path)
    # Time enough for the problem itself to be met on a loaded machine, not the hook's own deadline.
    extra: list[str] = ["--timeout", "30"]
    if case == "bad config":
        site.config.write_text(site.config.read_text(encoding="utf-8") + "[sink]\nx = 1\n", encoding="utf-8")
    elif case == "missing config":
        config = tmp_path / "nowhere.toml"
    elif case == "not json":
        stdin = "this is not what any tool sends"
    elif case == "bad budget":
        extra += ["--budget-chars", "0"]
    elif case == "unknown flag":
        extra += ["--no-such-flag"]
    done = hook(tool, config, stdin, *extra)
    assert done.returncode == 0
    assert done.stdout == ("{}\n" if tool == "gemini" else "")
    lines = said(done)
    assert len(lines) == 1, lines
    assert named in lines[0]
    assert "Traceback" not in done.stderr


def test_context_through_a_real_daemon_for_each_tool(
    site_files: Callable[..., SiteFiles],
    make_agentdb: Callable[..., Path],
    short_dir: Path,
    tmp_path: Path,
    daemons: Callable[..., subprocess.Popen[bytes]],
) -> None:
    site = site_files("laptop", make_agentdb(40), warm=warm(tmp_path, short_dir))
    log = tmp_path / "daemon.log"
    proc = daemons(site.config, log)
    wait_started(site, proc, log)
    found: list[dict[str, object]] = []

    def searchable() -> bool:
        done = subprocess.run(
            [sys.executable, "-m", "daemon", "search", "anything", "--floor", "0", "--json", "-c", str(site.config)],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode == 0:
            found[:] = json.loads(done.stdout)["results"]
        return len(found) >= 5

    wait_for(searchable, timeout=90, what="the index")
    # A prompt made of an episode's own words: the memory the hook must bring back.
    target = found[0]
    words = str(target["text"]).split()[:12]
    prompt = " ".join(words) if len(" ".join(words)) >= 20 else f"tell me about {' '.join(words)} again please"
    ref = f"laptop#{target['sourceId']}"
    project = tmp_path / "shop-api"
    (project / ".git").mkdir(parents=True)
    (project / "src").mkdir()

    for tool in TOOLS:
        event = PROMPT_EVENT[tool]
        session = {"session_id": f"{tool}-session-1"}
        done = hook(tool, site.config, stdin_for(tool, event, project / "src", prompt=prompt, **session))
        assert done.returncode == 0, done.stderr
        assert said(done) == []
        assert len(done.stdout) <= CAPS[tool]
        answer = json.loads(done.stdout)
        assert answer["hookSpecificOutput"]["hookEventName"] == event
        block = answer["hookSpecificOutput"]["additionalContext"]
        assert block.startswith(OPEN)
        assert block.endswith(CLOSE + "\n")
        first = set(REF.findall(block))
        assert ref in first, f"{tool}: the episode the prompt was made of is not in the block"

        # The same prompt again in the same session: what it was given is not given again.
        again = hook(tool, site.config, stdin_for(tool, event, project, prompt=prompt, **session))
        assert again.returncode == 0, again.stderr
        repeated = (
            set(REF.findall(json.loads(again.stdout)["hookSpecificOutput"]["additionalContext"]))
            if (again.stdout.strip() not in ("", "{}"))
            else set()
        )
        assert not first & repeated, f"{tool}: repeated {first & repeated}"

        # A session starting in a project none of these episodes is about (none is tagged with it):
        # no latest sessions, nothing over the relevance floor, so nothing to add, and no failure.
        start = hook(tool, site.config, stdin_for(tool, "SessionStart", project, **session))
        assert start.returncode == 0, start.stderr
        assert said(start) == []
        assert start.stdout == ("{}\n" if tool == "gemini" else "")

        # A few words: nothing to add.
        short = hook(tool, site.config, stdin_for(tool, event, project, prompt="yes go on", **session))
        assert (short.returncode, short.stdout) == (0, "{}\n" if tool == "gemini" else "")

    # After a compaction (Claude Code's SessionStart source), a pointer, not the block again.
    compact = hook("claude-code", site.config, stdin_for("claude-code", "SessionStart", project, source="compact"))
    assert json.loads(compact.stdout)["hookSpecificOutput"]["additionalContext"] == POINTER

    # A budget asked for is kept; by hand the block prints as text.
    small = hook(
        "codex", site.config, stdin_for("codex", "UserPromptSubmit", project, prompt=prompt), "--budget-tokens", "150"
    )
    assert len(json.loads(small.stdout)["hookSpecificOutput"]["additionalContext"]) <= 600
    by_hand = subprocess.run(
        [sys.executable, "-m", "daemon", "context", *prompt.split(), "-c", str(site.config), "--json"],
        capture_output=True,
        text=True,
        check=False,
        cwd=project,
    )
    assert by_hand.returncode == 0, by_hand.stderr
    shown = json.loads(by_hand.stdout)
    assert shown["project"] == "shop-api"
    assert ref in REF.findall(shown["block"])

    # --type keeps only memories of that type: the episode's own type keeps it, another drops it.
    def typed(*types: str) -> set[str]:
        options = [arg for kind in types for arg in ("--type", kind)]
        done = subprocess.run(
            [sys.executable, "-m", "daemon", "context", *prompt.split(), "-c", str(site.config), "--json", *options],
            capture_output=True,
            text=True,
            check=False,
            cwd=project,
        )
        assert done.returncode == 0, done.stderr
        return set(REF.findall(json.loads(done.stdout)["block"]))

    own = str(target["memoryType"])
    assert ref in typed(own)
    assert ref not in typed(next(kind for kind in MEMORY_TYPES if kind != own))

    # The light path: the settings cache is warm by now, and nothing heavy is imported.
    done = hook(
        "claude-code",
        site.config,
        stdin_for("claude-code", "UserPromptSubmit", project, prompt=prompt),
        importtime=True,
    )
    assert done.returncode == 0
    modules = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert not {m for m in modules if m.split(".")[0] in HEAVY}, "the context hook imported heavy modules"
    assert "daemon.cli.app" not in modules
    assert "daemon.config" not in modules

    # The daemon gone: exit 0, nothing on stdout, and why.
    proc.terminate()
    proc.wait(30)
    gone = hook("gemini", site.config, stdin_for("gemini", "BeforeAgent", project, prompt=prompt))
    assert (gone.returncode, gone.stdout) == (0, "{}\n")
    assert "no daemon is listening" in gone.stderr


@pytest.mark.parametrize(
    ("argv", "code", "named"),
    [
        (["--help"], 0, ""),
        (["--limit", "x", "deploy"], 2, "argument -n/--limit: invalid int value: 'x'"),
        ([], 2, "give a QUERY"),
        (["why", "did", "the", "deploy", "fail", "--budget-tokens", "0"], 2, "--budget-tokens must be at least 1"),
        (["why", "did", "the", "deploy", "fail"], 75, "no daemon is listening"),
    ],
)
def test_by_hand_a_problem_is_one_sentence_and_its_exit_code(
    argv: list[str], code: int, named: str, site_files: Callable[..., SiteFiles], short_dir: Path, tmp_path: Path
) -> None:
    site = site_files("laptop", warm=warm(tmp_path, short_dir))
    done = subprocess.run(
        [sys.executable, "-m", "daemon", "context", *argv, "-c", str(site.config)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == code, done.stderr
    if code == 0:
        assert done.stdout.startswith("usage: memsync context ")
        assert done.stderr == ""
    else:
        assert done.stderr.count(named) == 1, done.stderr
        assert "Traceback" not in done.stderr
        assert done.stdout == ""


def test_a_session_start_shows_the_projects_latest_sessions_through_the_recent_op(
    site_files: Callable[..., SiteFiles],
    make_agentdb: Callable[..., Path],
    agents: Callable[[Path], AgentProcess],
    short_dir: Path,
    tmp_path: Path,
    daemons: Callable[..., subprocess.Popen[bytes]],
) -> None:
    """The daemon's ``recent`` op feeds the block: this project's latest sessions (the tag
    ``project:<git top-level>``) are shown at session start, another project's are not among them."""
    db = make_agentdb(60)
    agent = agents(db)
    work = [
        ("wired the refund webhook to the ledger", "refunds now post ledger entries"),
        ("moved checkout retries behind a feature flag", "the flag defaults off in staging"),
    ]
    mine = [
        agent.store(episode(100 + i, sessionId=f"shop-{i}", task=task, output=out, tags=["project:zephyr"]))
        for i, (task, out) in enumerate(work)
    ]
    other = agent.store(episode(200, sessionId="blog-1", task="tuned the blog's RSS feed", tags=["project:blog"]))
    agent.close()
    site = site_files("laptop", db, warm=warm(tmp_path, short_dir))
    log = tmp_path / "daemon.log"
    proc = daemons(site.config, log)
    wait_started(site, proc, log)

    def indexed() -> bool:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "daemon",
                "search",
                "refund checkout RSS",
                "--json",
                "-n",
                "50",
                "-c",
                str(site.config),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        ids = {r["sourceId"] for r in json.loads(done.stdout)["results"]} if done.returncode == 0 else set()
        seen[:] = [done.returncode, sorted(ids), done.stderr[-300:]]
        return {str(i) for i in (*mine, other)} <= ids

    seen: list[object] = []

    try:
        wait_for(indexed, timeout=90, what="the project's episodes in the index")
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {mine} {other}, last search {seen}") from None
    project = tmp_path / "zephyr"
    (project / ".git").mkdir(parents=True)
    start = hook("claude-code", site.config, stdin_for("claude-code", "SessionStart", project, session_id="s-new"))
    assert start.returncode == 0, start.stderr
    assert said(start) == []
    block = json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"]
    shown = set(REF.findall(block))
    assert {f"laptop#{i}" for i in mine} <= shown  # in either section: the search may find them too
    # The latest sessions' section is there (first, at a start) and holds this project's episodes only
    # (the other project's may be among the related memories, never here).
    latest_title = LATEST.format(project=" (zephyr)")
    assert latest_title in block
    latest = set(REF.findall(block.split(latest_title, 1)[1].split(MEMORIES, 1)[0]))
    assert latest
    assert latest <= {f"laptop#{i}" for i in mine}
