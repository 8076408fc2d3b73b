"""A launchd LaunchAgent for one site, rendered from a :class:`ServiceSpec` with ``plistlib``: pure
text, no I/O.

A LaunchAgent runs in the user's GUI domain (``gui/<uid>``): it starts at login, and memsync runs as
the user who owns the AgentDB file. launchd has no equivalent of systemd's EnvironmentFile=, and a
plist is readable by anything that can read the user's LaunchAgents folder, so secrets stay out of
it: the daemon reads them from the per-site env file named by MEMSYNC_ENV_FILE (mode 0600).
"""

from __future__ import annotations

import plistlib
from typing import Any

from daemon.service.spec import ServiceSpec

# An XML comment after the DOCTYPE line (plistlib writes none, and reads past them) saying why each
# key is there. No "--" may appear inside an XML comment, so it names no site (a site may contain one).
_COMMENT = """<!--
  memsync: a LaunchAgent for the site in Label, rendered by `memsync service render` and installed
  by `memsync service install` (launchctl bootstrap gui/UID). Change the config rather than this
  file, and run `memsync service install` again after changing any path in it.
  - ProgramArguments: the installed memsync itself, resolved when this file was rendered; no
    wrapper that forks, no shell.
  - KeepAlive SuccessfulExit=false: restarted after a crash or a failure, not after a clean stop.
    ThrottleInterval: at most one start per 10 seconds (a configuration error, exit 78, repeats in
    the log at that pace until someone fixes it).
  - ExitTimeOut: seconds between SIGTERM, which lets the batch in flight finish, and SIGKILL.
  - EnvironmentVariables: PATH, because launchd's own is minimal; no secrets: MEMSYNC_ENV_FILE
    names the file (mode 0600) they are read from. MEMSYNC_DATA_DIR pins the data dir.
  - StandardOutPath/StandardErrorPath: launchd does not rotate these files.
-->
"""


def _agent(spec: ServiceSpec) -> dict[str, Any]:
    log = str(spec.log_file)
    return {
        "Label": spec.label,
        "ProgramArguments": [str(spec.executable), "run", "--config", str(spec.config)],
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "ThrottleInterval": 10,
        "ExitTimeOut": 30,
        "ProcessType": "Background",
        "WorkingDirectory": str(spec.data_dir),
        "EnvironmentVariables": {
            "PATH": spec.search_path,
            "PYTHONUNBUFFERED": "1",
            "MEMSYNC_DATA_DIR": str(spec.data_dir),
            "MEMSYNC_ENV_FILE": str(spec.env_file),
        },
        "StandardOutPath": log,
        "StandardErrorPath": log,
    }


def render_plist(spec: ServiceSpec) -> str:
    """The LaunchAgent plist for ``spec``."""
    if spec.kind != "launchd":
        raise ValueError(f"render_plist renders launchd agents, not {spec.kind}")
    text = plistlib.dumps(_agent(spec), fmt=plistlib.FMT_XML, sort_keys=False).decode("utf-8")
    head, doctype, body = text.partition('.dtd">\n')
    if not doctype:  # plistlib always writes a DOCTYPE; this keeps the file valid if that changes
        return text
    return head + doctype + _COMMENT + body


__all__ = ["render_plist"]
