"""Shared helpers: the bridge run in a background thread, and the real
``tradeterm serve`` started on free ports."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Tuple

import pytest

from tradeterm_agent.agent import Agent, Settings

REPO = Path(__file__).resolve().parents[3]
IN_CI = os.environ.get("CI", "").lower() == "true"


def wait_for(pred: Callable[[], Any], timeout: float = 10.0, what: str = "condition", step: float = 0.05) -> Any:
    """Polls ``pred`` until it returns something truthy (no fixed sleeps)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = pred()
        except Exception as e:  # keep polling through transient failures
            last = e
        if last and not isinstance(last, Exception):
            return last
        time.sleep(step)
    raise AssertionError("timed out after %.1f s waiting for %s (last: %r)" % (timeout, what, last))


class AgentThread:
    """The bridge (``Agent.run``) on its own asyncio loop in a thread."""

    def __init__(self, settings: Settings, api: Any) -> None:
        self.settings = settings
        self.api = api
        self.agent: Optional[Agent] = None
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._stop: Optional[asyncio.Event] = None
        self._thread = threading.Thread(target=self._main, daemon=True)
        self._ready = threading.Event()

    def _main(self) -> None:
        async def run() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            self.agent = Agent(self.settings, self.api)
            self._ready.set()
            await self.agent.run(self._stop)

        asyncio.run(run())

    def start(self) -> "AgentThread":
        self._thread.start()
        self._ready.wait(5)
        return self

    def wait_connected(self, sessions: int = 1, timeout: float = 10.0) -> None:
        wait_for(lambda: self.agent and self.agent.sessions >= sessions and self.agent.connected.is_set(),
                 timeout, "the bridge to connect (session %d)" % sessions)

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tradeterm_binary() -> Path:
    """The gateway binary: ``$TRADETERM_BIN``, else ``$CARGO_TARGET_DIR/debug/tradeterm``
    (default target dir ``~/.cache/tradeterm-target``), built once if missing."""
    env = os.environ.get("TRADETERM_BIN")
    if env:
        path = Path(env)
    else:
        target = Path(os.environ.get("CARGO_TARGET_DIR") or Path.home() / ".cache" / "tradeterm-target")
        path = target / "debug" / "tradeterm"
        if not path.exists() and shutil.which("cargo"):
            subprocess.run(["cargo", "build", "-p", "tradeterm", "--bin", "tradeterm"], cwd=str(REPO),
                           env=dict(os.environ, CARGO_TARGET_DIR=str(target)), timeout=1200, check=False)
    if not path.exists():
        msg = ("tradeterm binary not found at %s: build it (cargo build -p tradeterm --bin tradeterm) "
               "or set TRADETERM_BIN" % path)
        if IN_CI:
            pytest.fail(msg)
        pytest.skip(msg)
    return path


class Gateway:
    """``tradeterm serve --sim-terminals 0`` on free ports with a temp data dir."""

    def __init__(self, binary: Path, data_dir: Path, tls: Optional[Tuple[Path, Path, Path]] = None) -> None:
        self.binary = binary
        self.data_dir = data_dir
        self.tls = tls  # (cert chain, key, CA)
        self.rest_port, self.gw_port, self.mcp_port = free_port(), free_port(), free_port()
        self.proc: Optional[subprocess.Popen] = None
        self.creds: Dict[str, Any] = {}
        self.log_path = data_dir / "serve.log"
        scheme = "https" if tls else "http"
        self.gateway_base = "%s://127.0.0.1:%d" % (scheme, self.gw_port)
        self.agent_url = "%s://127.0.0.1:%d" % ("wss" if tls else "ws", self.gw_port)
        self.rest_base = "http://127.0.0.1:%d" % self.rest_port
        self.ssl_ctx = ssl.create_default_context(cafile=str(tls[2])) if tls else None

    def start(self) -> "Gateway":
        env = dict(os.environ, PORT=str(self.rest_port), GATEWAY_PORT=str(self.gw_port), MCP_PORT=str(self.mcp_port),
                   RUST_LOG=os.environ.get("RUST_LOG", "info"))
        env.pop("NODE_ENV", None)
        if self.tls:
            env.update(GATEWAY_TLS_CERT=str(self.tls[0]), GATEWAY_TLS_KEY=str(self.tls[1]))
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [str(self.binary), "serve", "--data-dir", str(self.data_dir), "--sim-terminals", "0"],
            env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
        log.close()
        creds = self.data_dir / "demo-credentials.json"

        def up() -> bool:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError("tradeterm serve exited: %s" % self.log_path.read_text()[-3000:])
            ok = self.http("GET", self.gateway_base + "/healthz")[0] == 200
            return ok and self.http("GET", self.rest_base + "/healthz")[0] == 200 and creds.exists()

        wait_for(up, 30, "tradeterm serve to listen")
        self.creds = json.loads(creds.read_text())
        return self

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)

    def http(self, method: str, url: str, body: Any = None, headers: Optional[Dict[str, str]] = None
             ) -> Tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
        if data is not None:
            req.add_header("Content-Type", "application/json")
        ctx = self.ssl_ctx if url.startswith("https") else None
        try:
            with urllib.request.urlopen(req, timeout=30, context=ctx) as r:
                raw = r.read()
                return r.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                return e.code, json.loads(raw)
            except ValueError:
                return e.code, raw.decode(errors="replace")
        except (urllib.error.URLError, ConnectionError, OSError):
            return 0, None

    def create_terminal(self, name: str) -> Tuple[str, str]:
        status, body = self.http("POST", self.gateway_base + "/api/dashboard/terminals", {"name": name},
                                 {"Authorization": "Bearer " + self.creds["license_key"]})
        assert status == 201, (status, body)
        return body["data"]["terminal"]["id"], body["data"]["terminal_key"]

    def rest(self, method: str, path: str, body: Any = None, terminal: Optional[str] = None) -> Tuple[int, Any]:
        headers = {"Authorization": "Bearer " + self.creds["api_key"]}
        if terminal:
            headers["X-Terminal-Id"] = terminal
        return self.http(method, self.rest_base + "/api/v1" + path, body, headers)


@pytest.fixture(scope="session")
def binary() -> Path:
    return tradeterm_binary()


@pytest.fixture(scope="module")
def gateway(binary: Path, tmp_path_factory: pytest.TempPathFactory):
    gw = Gateway(binary, tmp_path_factory.mktemp("serve")).start()
    yield gw
    gw.stop()


def settings_for(gw: Gateway, key: str, tmp: Path, **kw: Any) -> Settings:
    base = dict(gateway_url=gw.agent_url, terminal_key=key, state_dir=tmp / "state", poll_interval=0.1,
                tick_interval=0.05, backoff_cap=1.0, symbols=["EURUSD"])
    base.update(kw)
    return Settings(**base)
