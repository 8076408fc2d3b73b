"""The local Convex: tests/convex_local/server.mjs serves Convex's HTTP API on 127.0.0.1 from
convex-test's in-memory backend, loaded with the real cloud_functions. The tests start it once per
session (``convex_fixtures.local_convex``), a benchmark once per repetition; sites are registered
through it as an admin would."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx

from harness.paths import ROOT

SERVER = ROOT / "tests" / "convex_local" / "server.mjs"


@dataclass(frozen=True)
class LocalConvex:
    url: str
    admin_key: str

    def admin(self, kind: str, path: str, args: dict[str, Any]) -> Any:
        """Call any function, internal ones included, with the admin key (as `npx convex run` does)."""
        reply = httpx.post(
            f"{self.url}/api/{kind}",
            json={"path": path, "args": args, "format": "json"},
            headers={"Authorization": f"Convex {self.admin_key}"},
            timeout=30,
        ).json()
        if reply.get("status") != "success":
            raise RuntimeError(f"{path}: {reply}")
        return reply["value"]

    def dump(self) -> bytes:
        """Every byte the deployment stores, read around the functions: each table's documents as
        JSON, then each stored file (decompressed when it is gzip, as the archive's are)."""
        import base64
        import gzip

        reply = httpx.post(f"{self.url}/_local/dump", headers={"Authorization": f"Convex {self.admin_key}"}, timeout=60)
        reply.raise_for_status()
        found = reply.json()
        out = [json.dumps(found["tables"], ensure_ascii=False).encode()]
        for data in map(base64.b64decode, found["files"].values()):
            out.append(data)
            if data[:2] == b"\x1f\x8b":
                out.append(gzip.decompress(data))
        return b"\n".join(out)

    def load_seed(self) -> dict[str, int]:
        """The seed design's documents (tests/data/seed) written into the tables, around the functions."""
        reply = httpx.post(f"{self.url}/_local/seed", headers={"Authorization": f"Convex {self.admin_key}"}, timeout=60)
        reply.raise_for_status()
        counts: dict[str, int] = reply.json()
        return counts

    def register_site(self, name: str) -> str:
        """A new site and its secret, printed once by sites:register."""
        secret: str = self.admin("mutation", "sites:register", {"name": name})["secret"]
        return secret


@contextmanager
def running_local_convex(env: dict[str, str] | None = None) -> Iterator[LocalConvex]:
    """Start the local Convex server, yield it, stop it. Shared by the tests and bench/. ``env``:
    the deployment's environment variables (e.g. TELEGRAM_*), as `npx convex env set` gives them."""
    if not (ROOT / "node_modules" / "convex-test").is_dir():
        raise RuntimeError("node_modules/convex-test is missing: run `make node` (make test does it)")
    admin_key = secrets.token_hex(16)
    variables = {**os.environ, **(env or {}), "PORT": "0", "CONVEX_LOCAL_ADMIN_KEY": admin_key}
    proc = subprocess.Popen(
        ["node", str(SERVER)],
        cwd=ROOT,
        env=variables,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    try:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the local Convex server did not start (exit {proc.wait(10)})")
        yield LocalConvex(json.loads(line)["url"], admin_key)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()
