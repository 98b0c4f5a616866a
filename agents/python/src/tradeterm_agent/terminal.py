"""The terminal side: one object with the MetaTrader5 API, called from one
worker thread at a time.

Every function of the ``MetaTrader5`` package blocks until the terminal
answers (an IPC round trip, or longer while the terminal is busy). The bridge
therefore never calls it on the asyncio loop: a job (a plain function that may
make several calls) runs in a worker thread under one lock, so the websocket
loop keeps answering heartbeats whatever the terminal does.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, Optional, Tuple, TypeVar

from .constants import (
    IPC_ERRORS,
    RES_E_AUTO_TRADING_DISABLED,
    RES_E_INVALID_PARAMS,
    RES_E_NOT_FOUND,
)

log = logging.getLogger("tradeterm_agent.terminal")

#: ``last_error`` codes after which an ``order_send`` may have reached the
#: terminal: general IPC failure, receive failure, IPC timeout.
UNKNOWN_OUTCOME_ERRORS = (-10000, -10002, -10005)

T = TypeVar("T")


class AgentError(Exception):
    """An error answered to the gateway: ``{code, message, retcode?}``."""

    def __init__(self, code: str, message: str, retcode: Optional[str] = None, unknown_outcome: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.retcode = retcode
        #: ``order_send`` failed in a way that leaves open whether the order went out.
        self.unknown_outcome = unknown_outcome

    def body(self) -> Dict[str, Any]:
        """The protocol's error body."""
        out: Dict[str, Any] = {"code": self.code, "message": self.message}
        if self.retcode is not None:
            out["retcode"] = self.retcode
        return out


def load_api(module: Optional[str] = None, rpyc: Optional[str] = None, rpyc_timeout: float = 90.0) -> Any:
    """Imports the terminal API: the ``MetaTrader5`` module (or another module
    with the same API, named by ``module``), or, with ``rpyc`` = ``HOST:PORT``,
    the ``MetaTrader5`` module of an RPyC classic server (a Windows Python
    under Wine; ``--rpyc``, alias ``--mt5linux``), see ``rpyc_link.py``.
    Raises ``ValueError``/``RuntimeError`` with a message for the user."""
    if rpyc:
        from . import rpyc_link

        return rpyc_link.connect(rpyc, timeout=rpyc_timeout)
    name = module or "MetaTrader5"
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise RuntimeError(
            "cannot import %r (%s): install the MetaTrader5 package (Windows), or reach a terminal under Wine "
            "with --rpyc HOST:PORT (alias --mt5linux)" % (name, e)
        ) from e


class Terminal:
    """Serialised, off-loop access to an object with the MetaTrader5 API."""

    def __init__(
        self,
        api: Any,
        path: Optional[str] = None,
        login: Optional[int] = None,
        password: Optional[str] = None,
        server: Optional[str] = None,
        timeout_ms: Optional[int] = None,
    ) -> None:
        self.api = api
        self._path = path
        self._login = login
        self._password = password
        self._server = server
        self._timeout_ms = timeout_ms
        self._lock = threading.Lock()
        # Jobs serialise on the lock; two workers let a queued job start as
        # soon as a slow one ends without a round trip through the loop.
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="mt5")
        self.initialized = False

    async def run(self, job: Callable[..., T], *args: Any) -> T:
        """Runs ``job(self, *args)`` in a worker thread, under the terminal lock."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, self._locked, job, args)

    def _locked(self, job: Callable[..., T], args: Tuple[Any, ...]) -> T:
        with self._lock:
            return job(self, *args)

    def close(self) -> None:
        """Shuts the worker threads down (does not wait for a stuck call)."""
        self._pool.shutdown(wait=False)

    # -- calls made inside jobs -------------------------------------------

    def last_error(self) -> Tuple[int, str]:
        """``last_error()`` as ``(code, description)``."""
        try:
            err = self.api.last_error()
            return int(err[0]), str(err[1])
        except Exception as e:  # a broken link (RPyC) must not hide the first error
            return (-1, "last_error() failed: %s" % e)

    def initialize(self) -> bool:
        """``initialize(path, login=, password=, server=, timeout=)`` with what
        was configured; then ``login`` is implied by initialize's arguments."""
        kwargs: Dict[str, Any] = {}
        if self._login is not None:
            kwargs["login"] = int(self._login)
        if self._password is not None:
            kwargs["password"] = self._password
        if self._server is not None:
            kwargs["server"] = self._server
        if self._timeout_ms is not None:
            kwargs["timeout"] = int(self._timeout_ms)
        args = (self._path,) if self._path else ()
        ok = bool(self.api.initialize(*args, **kwargs))
        self.initialized = ok
        if not ok:
            code, desc = self.last_error()
            log.warning("initialize() failed: last_error=(%d, %r)", code, desc)
        return ok

    def failure(self, call: str) -> AgentError:
        """The error for a call that returned ``None``: typed from ``last_error()``."""
        code, desc = self.last_error()
        text = "%s failed: last_error=(%d, %r)" % (call, code, desc)
        if code in IPC_ERRORS:
            self.initialized = False
            # A send/receive failure or timeout of the IPC link (not "No IPC
            # connection") may come after the request reached the terminal.
            unknown = call.startswith("order_send") and code in UNKNOWN_OUTCOME_ERRORS
            return AgentError("INTERNAL", "MetaTrader terminal not reachable: " + text, unknown_outcome=unknown)
        if code == RES_E_INVALID_PARAMS:
            return AgentError("INVALID_ARGUMENT", text)
        if code == RES_E_NOT_FOUND:
            return AgentError("NOT_FOUND", text)
        if code == RES_E_AUTO_TRADING_DISABLED:
            return AgentError("TRADING_DISABLED", text)
        return AgentError("INTERNAL", text)
