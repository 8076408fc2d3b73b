"""The fleet's use of its memories, end to end: an agent's context hook on one site hands it
memories through a real daemon (real AgentDB file, real index); the daemon folds the hook's noted
use into the backbone; on another site ``memsync uses`` shows those memories as used by that
agent's hook, and a pin set there holds them at full salience."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conftest import SiteFiles, wait_for, wait_started, warm_section
from test_context_cli import REF, hook, stdin_for


def memsync(config: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "daemon", *argv, "-c", str(config)], capture_output=True, text=True, check=False
    )


def test_a_context_hooks_memories_show_up_as_used_on_another_site(
    site_files: Callable[..., SiteFiles],
    make_agentdb: Callable[..., Path],
    short_dir: Path,
    tmp_path: Path,
    daemons: Callable[..., subprocess.Popen[bytes]],
) -> None:
    laptop = site_files("laptop", make_agentdb(40), warm=warm_section(tmp_path, short_dir, "laptop"))
    vm = site_files("vm", tmp_path / "vm-agentdb.db")  # the same hub; no daemon needed to read it
    log = tmp_path / "daemon.log"
    proc = daemons(laptop.config, log)
    wait_started(laptop, proc, log)
    found: list[dict[str, Any]] = []

    def searchable() -> bool:
        done = memsync(laptop.config, "search", "anything", "--json", "--floor", "0")
        if done.returncode == 0:
            found[:] = json.loads(done.stdout)["results"]
        return len(found) >= 5

    wait_for(searchable, timeout=90, what="the index")
    words = str(found[0]["text"]).split()[:12]
    prompt = " ".join(words) if len(" ".join(words)) >= 20 else f"tell me about {' '.join(words)} again please"
    project = tmp_path / "shop-api"
    (project / ".git").mkdir(parents=True)

    done = hook("claude-code", laptop.config, stdin_for("claude-code", "UserPromptSubmit", project, prompt=prompt))
    assert done.returncode == 0, done.stderr
    handed = sorted(set(REF.findall(json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"])))
    assert handed, "the hook handed no memories"

    seen: list[dict[str, Any]] = []

    def used_elsewhere() -> bool:
        shown = memsync(vm.config, "uses", *handed, "--json")
        assert shown.returncode == 0, shown.stderr
        seen[:] = json.loads(shown.stdout)
        return all(u["byKind"].get("context", 0) >= 1 for u in seen)

    wait_for(used_elsewhere, timeout=60, what="the hook's use on the other site")
    assert [f"{u['sourceSite']}#{u['sourceId']}" for u in seen] == handed
    assert all(u["lastAccessed"] is not None and 0.5 < u["salience"] < 1.0 for u in seen)

    # The fleet's most salient memories include them; a pin from the other site holds one at 1.
    top = {f"{u['sourceSite']}#{u['sourceId']}" for u in json.loads(memsync(vm.config, "uses", "--json").stdout)}
    assert set(handed) <= top
    pinned = memsync(vm.config, "pin", handed[0], "--by", "ann", "--json")
    assert pinned.returncode == 0, pinned.stderr
    assert (json.loads(pinned.stdout)["pinned"], json.loads(pinned.stdout)["salience"]) == (True, 1.0)
    unknown = memsync(vm.config, "pin", "laptop#999999")
    assert unknown.returncode == 64
    assert "no memory laptop:999999" in unknown.stderr
    assert memsync(vm.config, "unpin", "nonsense").returncode == 2


def test_a_site_synced_by_memsync_sync_alone_sends_its_uses_on_too(
    site_files: Callable[..., SiteFiles], make_agentdb: Callable[..., Path]
) -> None:
    from daemon.usecases.memory.uses import noted
    from sync.backbone.hub import HubBackbone

    laptop = site_files("laptop", make_agentdb(3))
    first = memsync(laptop.config, "sync")
    assert first.returncode == 0, first.stderr
    settings = laptop.settings()
    assert noted(settings.state_path, "cli_search", [("laptop", "1"), ("laptop", "2")], agent="codex") is None
    again = memsync(laptop.config, "sync")
    assert again.returncode == 0, again.stderr
    hub = HubBackbone(settings.hub_path, "laptop", create=False)
    try:
        totals = hub.use_totals()
    finally:
        hub.close()
    assert {k: dict(t.by_kind) for k, t in totals.items()} == {
        ("laptop", "1"): {"cli_search": 1},
        ("laptop", "2"): {"cli_search": 1},
    }
