"""The real agentmem server for the tests: the binary named by
AGENTMEM_BIN (scripts/test.sh builds it), or one built here with
`go build ./cmd/agentmem`, started once per test run on a free loopback
port with a temporary SQLite file, and stopped at exit.

Without Go (and no AGENTMEM_BIN) the tests skip, saying why; in CI
(CI=true or 1) they fail instead.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
import unittest
from pathlib import Path
from typing import List, Optional, Sequence

REPO = Path(__file__).resolve().parents[3]

_server: Optional["Server"] = None
_lock = threading.Lock()


def in_ci() -> bool:
    """The same rule as scripts/test.sh: CI is "true" in any case, or "1"."""
    return os.environ.get("CI", "").lower() in ("true", "1")


def unavailable(reason: str) -> Exception:
    """Skips the tests (fails them in CI) for want of something."""
    if in_ci():
        return RuntimeError("CI: " + reason)
    return unittest.SkipTest(reason)


def binary(workdir: str) -> str:
    """Returns the agentmem binary to run."""
    env = os.environ.get("AGENTMEM_BIN")
    if env:
        if not os.access(env, os.X_OK):
            raise RuntimeError(f"AGENTMEM_BIN={env} is not an executable")
        return env
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK) else None)
    if go is None:
        raise unavailable("needs the agentmem binary: set AGENTMEM_BIN, or install Go so the tests build it (./scripts/test.sh does)")
    out = os.path.join(workdir, "agentmem")
    proc = subprocess.run([go, "build", "-o", out, "./cmd/agentmem"], cwd=REPO, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError("go build ./cmd/agentmem failed:\n" + proc.stderr)
    return out


class Server:
    """A running agentmem server."""

    def __init__(self, key_tenant: Optional[str] = None, args: Sequence[str] = ()) -> None:
        self.dir = tempfile.mkdtemp(prefix="agentmem-py-")
        self.bin = binary(self.dir)
        db = os.path.join(self.dir, "agentmem.db")
        #: With key_tenant, an API key of that tenant, created before the
        #: server starts (so the server requires keys). args are more flags
        #: of serve.
        self.key: Optional[str] = None
        if key_tenant:
            proc = subprocess.run([self.bin, "keys", "create", "--tenant", key_tenant, "--store", "sqlite://" + db], capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError("agentmem keys create failed:\n" + proc.stderr)
            self.key = proc.stdout.strip()
        self.proc = subprocess.Popen(
            [self.bin, "serve", "--addr", "127.0.0.1:0", "--store", "sqlite://" + db, "--log-level", "info", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.log: List[str] = []
        ready = threading.Event()
        addr: List[str] = []

        def read() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.log.append(line)
                m = re.search(r'msg="agentmem serving" addr=(\S+)', line)
                if m and not addr:
                    addr.append(m.group(1))
                    ready.set()
            ready.set()  # the process ended

        self.reader = threading.Thread(target=read, daemon=True)
        self.reader.start()
        if not ready.wait(60) or not addr:
            self.stop()  # the reader ends with the process
            raise RuntimeError("agentmem serve did not start:\n" + "".join(self.log))
        self.url = "http://" + addr[0]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(10)
        if self.proc.stderr is not None:
            self.proc.stderr.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def server() -> Server:
    """Returns the shared server, starting it on first use."""
    global _server
    with _lock:
        if _server is None:
            _server = Server()
            atexit.register(_server.stop)
        return _server


_ids = 0


def unique(prefix: str) -> str:
    """Returns a session ID no other test uses."""
    global _ids
    _ids += 1
    return f"{prefix}-{os.getpid()}-{int(time.time() * 1000)}-{_ids}"
