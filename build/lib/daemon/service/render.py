"""The service file for a spec, whichever manager it is for."""

from __future__ import annotations

from daemon.service.launchd import render_plist
from daemon.service.spec import ServiceSpec
from daemon.service.systemd import render_unit


def render(spec: ServiceSpec) -> str:
    return render_plist(spec) if spec.kind == "launchd" else render_unit(spec)


__all__ = ["render"]
