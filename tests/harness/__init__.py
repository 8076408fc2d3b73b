"""What the tests and the benchmarks both drive, importable without pytest: tests/conftest.py and
bench/common.py import it (bench/common.py puts tests/ on ``sys.path``) and pass its names on, so
each is written once. Everything here drives the real parts; nothing asserts on timings.

- ``paths``: the repository, the agentdb package's script folders, whether their npm packages are in
- ``waits``: ``wait_for``, the wait on an observable event that stands in for a sleep
- ``agentdb``: AgentDB files as the real package writes them (generated, a live agent over stdin,
  live writers), read back with plain sqlite3
- ``site``: a site's files and config, in the tests' layout and the benchmarks'
- ``daemon``: the real daemon and CLI in child processes: start, wait until started, log, status, stop
- ``hub``: what the daemon wrote, read from outside: the hub's episodes and count, the sidecar
- ``convex``: the local Convex server (the real cloud_functions on convex-test)
"""

from __future__ import annotations

from harness.agentdb import (
    FIXED_TS,
    AgentProcess,
    episode,
    episodes_file,
    generate_agentdb,
    live_agent_argv,
    read_agentdb_rows,
    run_live_agent,
    wal_commits,
    wal_writer_argv,
)
from harness.daemon import (
    ChildProcess,
    DaemonProcess,
    log_events,
    log_tail,
    logged,
    memsync,
    start_daemon,
    start_viewer,
    status_json,
    stop_daemon,
    stop_viewer,
    wait_started,
)
from harness.hub import hub_episodes, hub_total, sidecar_value
from harness.paths import GEN, ROOT, V3ALPHA, V139, need_node_modules, node_modules_missing
from harness.site import SiteFiles, make_site, short_dir, warm_section, write_config
from harness.waits import ProcessExited, WaitTimedOut, wait_for

__all__ = [
    "FIXED_TS",
    "GEN",
    "ROOT",
    "V3ALPHA",
    "V139",
    "AgentProcess",
    "ChildProcess",
    "DaemonProcess",
    "ProcessExited",
    "SiteFiles",
    "WaitTimedOut",
    "episode",
    "episodes_file",
    "generate_agentdb",
    "hub_episodes",
    "hub_total",
    "live_agent_argv",
    "log_events",
    "log_tail",
    "logged",
    "make_site",
    "memsync",
    "need_node_modules",
    "node_modules_missing",
    "read_agentdb_rows",
    "run_live_agent",
    "short_dir",
    "sidecar_value",
    "start_daemon",
    "start_viewer",
    "status_json",
    "stop_daemon",
    "stop_viewer",
    "wait_for",
    "wait_started",
    "wal_commits",
    "wal_writer_argv",
    "warm_section",
    "write_config",
]
