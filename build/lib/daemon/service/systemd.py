"""systemd units for one site, rendered from a :class:`ServiceSpec`: pure text, no I/O.

Two flavours: a system unit (``/etc/systemd/system``, ``User=``/``Group=`` the agent's user) and a
user unit (``~/.config/systemd/user``, kept running after logout by lingering). Both are
``Type=notify`` with a watchdog, take secrets only from an ``EnvironmentFile=``, and are sandboxed as
far as memsync still runs. The comments in the rendered text say why each line is there: a person
reading ``systemctl cat`` should not need this file.
"""

from __future__ import annotations

import re

from daemon.service.spec import ServiceSpec

# Words that need no quoting in a unit file. Anything else is double-quoted (systemd unquotes and
# C-unescapes ExecStart=, ReadWritePaths= and Environment= words).
_PLAIN = re.compile(r"^[A-Za-z0-9/._+:@=,-]+$")


def _word(text: str, *, command: bool = False) -> str:
    """One word of a setting: '%' starts a specifier everywhere, '$' a variable in a command's arguments."""
    text = text.replace("%", "%%")
    if command:
        text = text.replace("$", "$$")
    if _PLAIN.match(text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _value(text: str) -> str:
    """A setting that takes the rest of the line as one path (EnvironmentFile=): no quoting there."""
    return text.replace("%", "%%")


def _header(spec: ServiceSpec) -> list[str]:
    who = f"a system unit running as {spec.user}:{spec.group}" if spec.system else "a user unit"
    return [
        f"# memsync for site {spec.site}: {who}.",
        "# Rendered by `memsync service render`, installed by `memsync service install`. Change the",
        "# config rather than this file, and run `memsync service install` again after changing any",
        "# path in it: the sandbox below opens exactly the folders the config names.",
        "",
    ]


def _unit_section(spec: ServiceSpec) -> list[str]:
    lines = ["[Unit]", f"Description=memsync: sync AgentDB episodes for site {spec.site}"]
    if spec.system:
        lines += [
            "# The backbone may be across the network; memsync retries it anyway, but starting once",
            "# the network is up saves a round of backoff at boot.",
            "After=network-online.target",
            "Wants=network-online.target",
        ]
    else:
        lines += [
            "# No After=/Wants=network-online.target: a user manager cannot see that system target, so",
            "# the lines would order nothing. memsync retries an unreachable backbone with backoff.",
        ]
    return [*lines, ""]


def _service_section(spec: ServiceSpec) -> list[str]:
    # systemd substitutes $VARIABLES in a command's arguments, not in the program's path.
    arguments = " ".join(_word(w, command=True) for w in ("run", "--config", str(spec.config)))
    command = f"{_word(str(spec.executable))} {arguments}"
    lines = [
        "[Service]",
        "# notify: memsync sends READY=1 once the site is open (so `systemctl start` waits for it and",
        "# reports a failed start), STATUS= lines for `systemctl status`, and WATCHDOG=1 from its run",
        "# loop: a daemon that stops sending it for WatchdogSec= is killed and restarted.",
        "Type=notify",
        "# Only memsync's own process may notify, not its warm-layer worker.",
        "NotifyAccess=main",
        f"WatchdogSec={spec.watchdog_sec}s",
        "# The installed program itself, resolved when this unit was rendered: a wrapper that forks",
        "# (`uv run` and the like) would be the main process, and memsync's notifications ignored.",
        f"ExecStart={command}",
    ]
    if spec.system:
        lines += [
            "# The agent's user: memsync reads, and shares the folder of, the AgentDB file it writes.",
            f"User={spec.user}",
            f"Group={spec.group}",
        ]
    lines += [
        "# Secrets (MEMSYNC_BACKBONE__SITE_SECRET, MEMSYNC_WARM__API_KEY, ...) come from this file only",
        "# (mode 0600), never from this unit, which any user can read with `systemctl cat`. The '-':",
        "# without the file memsync still starts, and exits 78 naming the secret it misses.",
        f"EnvironmentFile=-{_value(str(spec.env_file))}",
        "# Log lines reach the journal as they are written.",
        "Environment=PYTHONUNBUFFERED=1",
        "# The data dir this unit's sandbox opens, pinned so that memsync uses exactly that one,",
        "# whatever HOME or XDG_DATA_HOME the service sees.",
        f"Environment={_word(f'MEMSYNC_DATA_DIR={spec.data_dir}')}",
        "# SIGTERM to memsync alone: it finishes the batch in flight, says STOPPING=1, and stops its",
        "# warm-layer worker itself; whatever is still running after TimeoutStopSec= gets SIGKILL.",
        "KillSignal=SIGTERM",
        "KillMode=mixed",
        "TimeoutStopSec=30",
        "Restart=on-failure",
        "RestartSec=5",
        "# 78 (EX_CONFIG): the configuration is wrong. Restarting cannot fix that; a person must.",
        "RestartPreventExitStatus=78",
        "",
    ]
    return lines


def _sandbox(spec: ServiceSpec) -> list[str]:
    writable = " ".join(_word(str(p)) for p in spec.writable)
    lines = ["# Sandbox: what memsync does not need, taken away."]
    if not spec.system:
        lines += [
            "# In a user unit the file-system settings below need a user namespace: systemd >= 253",
            "# sets one up by itself (and skips them where user namespaces are off); older versions",
            "# skip them. Either way the unit runs.",
        ]
    lines += [
        "NoNewPrivileges=yes",
        "# The whole file system read-only, home folders included, except these folders: memsync's",
        "# data dir, and the AgentDB file's folder, where a reader of a WAL database writes its -shm",
        "# file. They must exist when the service starts (install creates the data dir).",
        "ProtectSystem=strict",
        "ProtectHome=read-only",
        f"ReadWritePaths={writable}",
        "PrivateTmp=yes",
        "PrivateDevices=yes",
        "ProtectKernelTunables=yes",
        "ProtectKernelModules=yes",
        "ProtectKernelLogs=yes",
        "ProtectControlGroups=yes",
        "ProtectClock=yes",
        "ProtectHostname=yes",
        "RestrictSUIDSGID=yes",
        "RestrictRealtime=yes",
        "RestrictNamespaces=yes",
        "LockPersonality=yes",
        "# Unix sockets (systemd's notify socket, the warm layer's search socket), IP for the",
        "# backbone and the embedding providers, netlink for the resolver's address lookups.",
        "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK",
        "SystemCallArchitectures=native",
        "SystemCallFilter=@system-service",
        "SystemCallErrorNumber=EPERM",
        "# Not MemoryDenyWriteExecute=: ctypes callbacks (libffi closures) may need memory that is",
        "# both writable and executable.",
        "# New files private to the service user. SQLite gives a database's -wal and -shm files the",
        "# database file's own mode whatever the umask, so the agent can still open them.",
        "UMask=0077",
        "",
    ]
    return lines


def _install_section(spec: ServiceSpec) -> list[str]:
    if spec.system:
        return ["[Install]", "WantedBy=multi-user.target"]
    return [
        "[Install]",
        "# Started with the user's manager, which lingering keeps running from boot, logged in or not.",
        "WantedBy=default.target",
    ]


def render_unit(spec: ServiceSpec) -> str:
    """The unit file for ``spec`` (a system unit when ``spec.system``, else a user unit)."""
    if spec.kind != "systemd":
        raise ValueError(f"render_unit renders systemd units, not {spec.kind}")
    if spec.system and not (spec.user and spec.group):
        raise ValueError("a system unit needs the user and group it runs as: --user NAME [--group NAME]")
    lines = [*_header(spec), *_unit_section(spec), *_service_section(spec), *_sandbox(spec), *_install_section(spec)]
    return "\n".join(lines) + "\n"


__all__ = ["render_unit"]
