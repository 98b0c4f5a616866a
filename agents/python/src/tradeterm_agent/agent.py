"""The connection to the gateway: agent protocol v1 over one WebSocket
(``websockets``, asyncio).

One asyncio loop carries the protocol (hello/welcome, requests answered
concurrently, pings both ways, events); every terminal call runs in the
terminal's worker thread (``Terminal.run``), so a slow terminal never delays a
heartbeat. Two pollers observe the terminal, since the Python package has no
callbacks: quotes of the streamed symbols every ``tick_interval`` (pushed when
they change, at most one per ``TICK_THROTTLE_S`` per symbol, and re-sent
unchanged every ``TICK_REFRESH_S``), and the account, positions, orders and
switches every ``poll_interval`` (``account``, ``trade_transaction`` and
``permissions`` events).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import random
import ssl
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple
from urllib.parse import urlsplit, urlunsplit

from websockets.asyncio.client import connect
from websockets.exceptions import WebSocketException

from . import __version__
from . import commands as C
from . import mapping as M
from .idempotency import KEY_MAX, IdempotencyStore
from .terminal import AgentError, Terminal

log = logging.getLogger("tradeterm_agent")

PROTOCOL_VERSION = 1
AGENT_NAME = "tradeterm-agent-python"
#: Largest frame (the protocol's limit).
MAX_FRAME = 16 * 1024 * 1024
#: A changed quote is pushed at most this often per symbol (≤ 5 per second).
TICK_THROTTLE_S = 0.2
#: An unchanged quote is re-sent this often (the protocol asks for ≤ 500 ms; slack for a busy loop).
TICK_REFRESH_S = 0.35
#: Most symbols streamed at once (the configured ones plus those asked about).
MAX_STREAMED = 200
#: Seconds to wait for ``welcome``.
WELCOME_TIMEOUT_S = 10.0


@dataclass
class Settings:
    """Everything the bridge is configured with (see ``cli.py``)."""

    gateway_url: str
    terminal_key: str
    allow_trading: bool = False
    ca_file: Optional[str] = None
    symbols: List[str] = field(default_factory=list)
    poll_interval: float = 0.25
    tick_interval: float = 0.1
    state_dir: Optional[Path] = None
    uid: Optional[str] = None
    deviation: int = 20
    server_time_offset: int = 0
    backoff_initial: float = 0.1
    backoff_cap: float = 10.0
    terminal_path: Optional[str] = None
    login: Optional[int] = None
    password: Optional[str] = None
    server: Optional[str] = None
    init_timeout_ms: Optional[int] = None


def agent_url(url: str) -> str:
    """``ws(s)://HOST:PORT`` (or ``http(s)://``) → ``ws(s)://HOST:PORT/agent/v1``."""
    parts = urlsplit(url.strip())
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme, parts.scheme)
    if scheme not in ("ws", "wss"):
        raise ValueError("the gateway URL must start with ws://, wss://, http:// or https://")
    path = parts.path if parts.path not in ("", "/") else "/agent/v1"
    return urlunsplit((scheme, parts.netloc, path, parts.query, ""))


def now_ms() -> int:
    return int(time.time() * 1000)


class Backoff:
    """Exponential backoff with jitter: ``initial`` doubling up to ``cap``,
    each wait drawn uniformly from the upper half of the current step."""

    def __init__(self, initial: float, cap: float) -> None:
        self.initial = max(0.01, initial)
        self.cap = max(self.initial, cap)
        self.step = self.initial

    def next(self) -> float:
        d = self.step
        self.step = min(self.cap, self.step * 2)
        return random.uniform(d / 2, d)

    def reset(self) -> None:
        self.step = self.initial


class _Stream:
    __slots__ = ("bid", "ask", "time", "pushed")

    def __init__(self) -> None:
        self.bid: Optional[float] = None
        self.ask: Optional[float] = None
        self.time = 0
        self.pushed = 0.0


class _Restart(Exception):
    """The session ends; reconnect."""


# -- jobs run in the terminal thread ------------------------------------------


def job_identity(term: Terminal, ctx: C.Context, uid: Optional[str]) -> Dict[str, Any]:
    """What ``hello`` needs, read from the terminal."""
    if not term.initialized and not term.initialize():
        raise term.failure("initialize()")
    api = term.api
    ti = api.terminal_info()
    if ti is None:
        raise term.failure("terminal_info()")
    ai = api.account_info()
    if ai is None:
        raise term.failure("account_info()")
    mode = M.trade_mode_name(api, ai.trade_mode)
    if mode is None:
        raise AgentError("INTERNAL", "unknown account trade_mode %r: refusing to guess" % (ai.trade_mode,))
    build = int(M.field(ti, "build", 0) or 0)
    if not build:
        v = api.version()
        build = int(v[1]) if v else 0
    data_path = str(M.field(ti, "data_path", "") or M.field(ti, "path", "") or "")
    return {
        "terminal": {
            "uid": uid or hashlib.sha256(data_path.encode("utf-8")).hexdigest()[:32].upper(),
            "platform": "MT5",
            "build": build,
        },
        "account": {
            "login": int(ai.login),
            "server": str(ai.server or ""),
            "company": str(M.field(ai, "company", "") or ""),
            "currency": str(ai.currency or ""),
            "leverage": int(ai.leverage or 0),
            "trade_mode": mode,
        },
        "automated_trading": M.automated_trading(ti, ai),
    }


def job_quotes(
    term: Terminal, ctx: C.Context, names: List[str]
) -> Tuple[Dict[str, Tuple[float, float, int]], List[str]]:
    """Latest quotes of the streamed symbols (absent when unavailable), and the
    names the terminal does not know. A symbol outside Market Watch is
    selected first (``symbol_select(name, True)``)."""
    out: Dict[str, Tuple[float, float, int]] = {}
    unknown: List[str] = []
    if not term.initialized:
        return out, unknown
    api = term.api
    for name in names:
        t = api.symbol_info_tick(name)
        if t is None:
            term.failure("symbol_info_tick()")
            if not term.initialized:  # the IPC link is down
                break
            if not api.symbol_select(name, True):
                unknown.append(name)
                continue
            t = api.symbol_info_tick(name)
        if t is None:
            continue
        bid, ask = M.num(t.bid), M.num(t.ask)
        if bid > 0.0 or ask > 0.0:
            out[name] = (bid, ask, M.msc_or_s(ctx.tm, t, "time"))
    return out, unknown


@dataclass
class Snapshot:
    """What the state poller saw."""

    automated: bool
    account: Optional[Dict[str, Any]] = None
    positions: Optional[Dict[int, Tuple[float, float, float]]] = None
    orders: Optional[Set[int]] = None
    deals: List[Dict[str, Any]] = field(default_factory=list)


def job_snapshot(
    term: Terminal,
    ctx: C.Context,
    prev_positions: Optional[Dict[int, Tuple[float, float, float]]],
    since_ms: int,
    seen_deals: Set[int],
    reinit: bool,
) -> Snapshot:
    """Switches, account, positions and orders; the new deals of positions that changed."""
    api = term.api
    if not term.initialized:
        if not reinit or not term.initialize():
            return Snapshot(automated=False)
    ti = api.terminal_info()
    ai = api.account_info()
    if ti is None or ai is None:
        term.failure("terminal_info()/account_info()")
        return Snapshot(automated=False)
    snap = Snapshot(automated=M.automated_trading(ti, ai))
    acc = M.account_info(api, ai)
    snap.account = acc if acc["trade_mode"] is not None else None
    try:
        rows = C.rows(term, "positions_get()", api.positions_get())
        orders = C.rows(term, "orders_get()", api.orders_get())
    except AgentError:
        return snap
    snap.positions = {int(p.ticket): (M.num(p.volume), M.num(p.sl), M.num(p.tp)) for p in rows}
    snap.orders = {int(o.ticket) for o in orders}
    if prev_positions is not None:
        changed = set(snap.positions) ^ set(prev_positions)
        changed |= {t for t, v in snap.positions.items() if t in prev_positions and prev_positions[t][0] != v[0]}
        for ticket in sorted(changed):
            deals = api.history_deals_get(position=ticket)
            for d in deals or ():
                dd = M.deal(api, ctx.tm, d)
                if dd["ticket"] not in seen_deals and dd["time"] >= since_ms:
                    snap.deals.append(dd)
    return snap


# -- the agent ---------------------------------------------------------------


class Agent:
    """The bridge: keeps one gateway connection alive and serves it."""

    def __init__(self, settings: Settings, api: Any) -> None:
        self.s = settings
        self.url = agent_url(settings.gateway_url)
        self.term = Terminal(
            api,
            path=settings.terminal_path,
            login=settings.login,
            password=settings.password,
            server=settings.server,
            timeout_ms=settings.init_timeout_ms,
        )
        self._streams: Dict[str, _Stream] = {}
        self._streams_lock = threading.Lock()
        self.ctx = C.Context(
            api,
            M.TimeMap(settings.server_time_offset),
            settings.allow_trading,
            settings.deviation,
            note_symbol=self.stream_symbol,
        )
        state = settings.state_dir
        self.idem = IdempotencyStore(state / "idempotency.json" if state else None)
        for s in settings.symbols:
            self.stream_symbol(s)
        # Observable state (tests, logs).
        self.connected = asyncio.Event()
        self.terminal_id: Optional[str] = None
        self.sessions = 0
        self.automated: Optional[bool] = None
        self._ws: Any = None
        self._send_lock: Optional[asyncio.Lock] = None
        self._tasks: Set[asyncio.Task] = set()
        self._identity: Optional[Dict[str, Any]] = None
        self._positions: Optional[Dict[int, Tuple[float, float, float]]] = None
        self._orders: Optional[Set[int]] = None
        self._account_key: Optional[Tuple[float, ...]] = None
        self._seen_deals: Set[int] = set()
        self._since_ms = now_ms()
        self._last_heard = 0.0

    # -- symbols ------------------------------------------------------------

    def stream_symbol(self, name: str) -> None:
        """Streams a symbol's quotes from now on (called from terminal jobs too)."""
        with self._streams_lock:
            if name not in self._streams and len(self._streams) < MAX_STREAMED:
                self._streams[name] = _Stream()

    def streamed(self) -> List[str]:
        with self._streams_lock:
            return list(self._streams)

    # -- run ----------------------------------------------------------------

    async def run(self, stop: Optional[asyncio.Event] = None) -> None:
        """Connects, serves, reconnects with backoff, until ``stop`` is set."""
        stop = stop or asyncio.Event()
        backoff = Backoff(self.s.backoff_initial, self.s.backoff_cap)
        try:
            while not stop.is_set():
                try:
                    await self._connect_once(stop, backoff)
                except asyncio.CancelledError:
                    raise
                except (OSError, WebSocketException, asyncio.TimeoutError, _Restart, AgentError) as e:
                    log.warning("gateway session ended: %s", _describe(e))
                except Exception:  # never let one bug end the bridge
                    log.exception("unexpected failure; reconnecting")
                self.connected.clear()
                delay = backoff.next()
                log.info("reconnecting in %.2f s", delay)
                try:
                    await asyncio.wait_for(stop.wait(), timeout=delay)
                except asyncio.TimeoutError:
                    pass
        finally:
            for t in list(self._tasks):
                t.cancel()
            self.term.close()

    async def _identity_now(self) -> Dict[str, Any]:
        """The hello identity: read fresh, or the last one read when the terminal is down."""
        try:
            self._identity = await self.term.run(job_identity, self.ctx, self.s.uid)
        except AgentError as e:
            if self._identity is None:
                raise
            log.warning("terminal unavailable (%s); using the last account read for hello", e.message)
            self._identity = dict(self._identity, automated_trading=False)
        return self._identity

    def _ssl(self) -> Optional[ssl.SSLContext]:
        if not self.url.startswith("wss://"):
            return None
        ctx = ssl.create_default_context(cafile=self.s.ca_file) if self.s.ca_file else ssl.create_default_context()
        return ctx

    async def _connect_once(self, stop: asyncio.Event, backoff: Backoff) -> None:
        ident = await self._identity_now()
        automated = bool(ident["automated_trading"])
        hello = {
            "type": "hello",
            "protocol_version": PROTOCOL_VERSION,
            "terminal_key": self.s.terminal_key,
            "terminal": ident["terminal"],
            "account": ident["account"],
            "permissions": {"allow_trading": self.s.allow_trading, "automated_trading": automated},
            "agent": {"name": AGENT_NAME, "version": __version__},
        }
        async with connect(
            self.url,
            ssl=self._ssl(),
            max_size=MAX_FRAME,
            open_timeout=10,
            close_timeout=2,
            ping_interval=None,
            compression=None,
        ) as ws:
            self._ws = ws
            self._send_lock = asyncio.Lock()
            await ws.send(json.dumps(hello))  # never logged: it carries the key
            first = json.loads(await asyncio.wait_for(ws.recv(), WELCOME_TIMEOUT_S))
            if not isinstance(first, dict) or first.get("type") != "welcome":
                code = first.get("code") if isinstance(first, dict) else None
                raise _Restart("gateway refused the hello: %s %s" % (code, first.get("message") if code else first))
            self.terminal_id = str(first.get("terminal_id"))
            hb = max(0.2, float(first.get("heartbeat_interval_ms", 10_000)) / 1000.0)
            hb_timeout = max(hb, float(first.get("heartbeat_timeout_ms", 30_000)) / 1000.0)
            self.automated = automated
            self._positions = None  # a fresh baseline: events are about changes seen from now
            self._account_key = None
            self.sessions += 1
            self._last_heard = time.monotonic()
            backoff.reset()
            self.connected.set()
            log.info("connected to %s as terminal %s", self.url, self.terminal_id)
            tasks = [
                asyncio.ensure_future(self._reader(ws)),
                asyncio.ensure_future(self._heartbeat(ws, hb, hb_timeout)),
                asyncio.ensure_future(self._ticker()),
                asyncio.ensure_future(self._poller()),
                asyncio.ensure_future(stop.wait()),
            ]
            try:
                done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
                for t in done:
                    if not t.cancelled() and t.exception() is not None:
                        raise t.exception()  # type: ignore[misc]
            finally:
                for t in tasks:
                    t.cancel()
                self.connected.clear()

    # -- sending ------------------------------------------------------------

    async def _send(self, frame: Dict[str, Any]) -> None:
        ws, lock = self._ws, self._send_lock
        if ws is None or lock is None:
            return
        text = json.dumps(frame, separators=(",", ":"), allow_nan=False)
        async with lock:
            await ws.send(text)

    async def _event(self, event: Dict[str, Any]) -> None:
        await self._send({"type": "event", "event": event})

    # -- session tasks --------------------------------------------------------

    async def _reader(self, ws: Any) -> None:
        async for raw in ws:
            self._last_heard = time.monotonic()
            if not isinstance(raw, str):
                continue
            try:
                frame = json.loads(raw)
            except ValueError:
                await self._send({"type": "error", "code": "MALFORMED_FRAME", "message": "not JSON"})
                continue
            if not isinstance(frame, dict):
                await self._send({"type": "error", "code": "MALFORMED_FRAME", "message": "not a JSON object"})
                continue
            kind = frame.get("type")
            if kind == "request":
                task = asyncio.ensure_future(self._answer(frame))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            elif kind == "ping":
                await self._send({"type": "pong", "ts": frame.get("ts", 0)})
            elif kind in ("pong", "welcome"):
                pass
            elif kind == "error":
                log.warning("gateway error frame: %s %s", frame.get("code"), frame.get("message"))
                if frame.get("code") == "AUTH_FAILED" and not frame.get("id"):
                    raise _Restart("terminal key revoked or rotated")
            else:
                await self._send(
                    {"type": "error", "code": "UNKNOWN_FRAME", "message": "unknown frame type %r" % (kind,)}
                )
        raise _Restart("the gateway closed the connection")

    async def _heartbeat(self, ws: Any, interval: float, timeout: float) -> None:
        next_ping = time.monotonic() + interval
        while True:
            await asyncio.sleep(min(interval, 0.5))
            now = time.monotonic()
            if now - self._last_heard > timeout:
                raise _Restart("no frame from the gateway for %.0f s" % (now - self._last_heard))
            if now >= next_ping:
                await self._send({"type": "ping", "ts": now_ms()})
                next_ping = now + interval

    async def _ticker(self) -> None:
        while True:
            names = self.streamed()
            if names:
                try:
                    quotes, unknown = await self.term.run(job_quotes, self.ctx, names)
                except Exception as e:  # a broken terminal link must not end the gateway session
                    log.debug("quote poll failed: %s", e)
                    quotes, unknown = {}, []
                for name in unknown:
                    log.warning("the terminal does not know symbol %s: not streamed", name)
                    with self._streams_lock:
                        self._streams.pop(name, None)
                now = time.monotonic()
                for name, (bid, ask, tick_ms) in quotes.items():
                    st = self._streams.get(name)
                    if st is None:
                        continue
                    changed = (bid, ask) != (st.bid, st.ask)
                    if changed and now - st.pushed >= TICK_THROTTLE_S:
                        st.bid, st.ask, st.time, st.pushed = bid, ask, tick_ms, now
                    elif not changed and now - st.pushed >= TICK_REFRESH_S:
                        st.pushed = now
                    else:
                        continue
                    await self._event({"kind": "tick", "symbol": name, "bid": bid, "ask": ask, "time": st.time})
            await asyncio.sleep(self.s.tick_interval)

    async def _poller(self) -> None:
        reinit_backoff = Backoff(1.0, max(1.0, self.s.backoff_cap))
        next_reinit = 0.0
        while True:
            reinit = time.monotonic() >= next_reinit
            try:
                snap = await self.term.run(
                    job_snapshot, self.ctx, self._positions, self._since_ms, set(self._seen_deals), reinit
                )
            except Exception as e:  # a broken terminal link must not end the gateway session
                log.warning("terminal poll failed: %s: %s", type(e).__name__, e)
                self.term.initialized = False
                snap = Snapshot(automated=False)
            if self.term.initialized:
                reinit_backoff.reset()
                next_reinit = 0.0
            elif reinit:
                next_reinit = time.monotonic() + reinit_backoff.next()
            await self._publish(snap)
            await asyncio.sleep(self.s.poll_interval)

    async def _publish(self, snap: Snapshot) -> None:
        if snap.automated != self.automated:
            self.automated = snap.automated
            await self._event(
                {"kind": "permissions", "allow_trading": self.s.allow_trading, "automated_trading": snap.automated}
            )
        if snap.account is not None:
            a = snap.account
            key = (a["balance"], a["equity"], a["margin"], a["free_margin"])
            if key != self._account_key:
                first = self._account_key is None
                self._account_key = key
                if not first:
                    await self._event(dict(kind="account", **a))
        if snap.positions is None or snap.orders is None:
            return
        prev_p, prev_o = self._positions, self._orders
        self._positions, self._orders = snap.positions, snap.orders
        if prev_p is None or prev_o is None:
            return
        for ticket in sorted(snap.orders - prev_o):
            await self._transaction("order_added", order=ticket)
        for ticket in sorted(prev_o - snap.orders):
            await self._transaction("order_removed", order=ticket)
        for d in snap.deals:
            self._seen_deals.add(d["ticket"])
            await self._transaction("deal_added", deal=d, order=d["order"], position=d["position"])
        for ticket, (vol, sl, tp) in sorted(snap.positions.items()):
            old = prev_p.get(ticket)
            if old is not None and old[0] == vol and (old[1], old[2]) != (sl, tp):
                await self._transaction("position_modified", position=ticket)
        if len(self._seen_deals) > 50_000:
            self._seen_deals = set(sorted(self._seen_deals)[-10_000:])

    async def _transaction(
        self, kind: str, deal: Optional[Dict[str, Any]] = None, order: int = 0, position: int = 0
    ) -> None:
        event: Dict[str, Any] = {
            "kind": "trade_transaction", "transaction": kind, "order": order, "position": position,
        }
        if deal is not None:
            event["deal"] = deal
        await self._event(event)

    # -- requests -------------------------------------------------------------

    async def _answer(self, frame: Dict[str, Any]) -> None:
        rid = frame.get("id")
        command = frame.get("command")
        if not isinstance(rid, str):
            await self._send({"type": "error", "code": "MALFORMED_FRAME", "message": "request without a string id"})
            return
        if not isinstance(command, dict):
            outcome: Dict[str, Any] = {"error": {"code": "MALFORMED_FRAME", "message": "request without a command"}}
        else:
            try:
                outcome = await self._outcome(command)
            except Exception as e:  # the answer must go out whatever happened
                log.exception("request %s failed", rid)
                outcome = {"error": {"code": "INTERNAL", "message": "%s: %s" % (type(e).__name__, e)}}
        try:
            await self._send(dict({"type": "response", "id": rid}, **outcome))
        except (OSError, WebSocketException) as e:
            log.warning("could not answer request %s: %s", rid, _describe(e))

    async def _run(self, command: Dict[str, Any]) -> Dict[str, Any]:
        outcome, _ = await self._run_ex(command)
        return outcome

    async def _run_ex(self, command: Dict[str, Any]) -> Tuple[Dict[str, Any], bool]:
        """The outcome, and whether a failed trade may still have gone out."""
        try:
            return {"result": await self.term.run(C.execute, self.ctx, command)}, False
        except AgentError as e:
            if e.code == "TRADING_DISABLED" and e.retcode is not None:
                self.automated = None  # re-announce the switches at the next poll
            return {"error": e.body()}, e.unknown_outcome

    async def _outcome(self, command: Dict[str, Any]) -> Dict[str, Any]:
        name = command.get("cmd")
        key = C.idempotency_key(command)
        if name not in C.TRADE_COMMANDS or key is None:
            return await self._run(command)
        if not isinstance(key, str) or not key or len(key) > KEY_MAX:
            return _error("INVALID_ARGUMENT", "idempotency_key must be 1 to %d characters" % KEY_MAX)
        full = "%s:%s" % (name, key)
        fp = hashlib.sha256(json.dumps(command, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
        async with self.idem.lock(full):
            rec = self.idem.get(full)
            if rec is not None:
                if rec.get("fp") != fp:
                    return _error("INVALID_ARGUMENT",
                                  "idempotency_key `%s` was already used for a different request" % key)
                if rec.get("state") == "done":
                    log.info("idempotency key seen before: returning the first outcome of %s", name)
                    return dict(rec["outcome"])
                if self.idem.pending_from_earlier_process(full):
                    return _error("INTERNAL", (
                        "an earlier attempt with this idempotency_key was interrupted while the order was out: "
                        "its outcome is unknown; check positions and history before sending a new request"))
            self.idem.begin(full, fp)
            outcome, unknown = await self._run_ex(command)
            err = outcome.get("error")
            if unknown and err is not None:
                # Never send twice: later attempts with this key get this answer.
                outcome = _error("INTERNAL", (
                    "outcome unknown: %s; check positions and history before sending a new request"
                    % err["message"]))
                self.idem.finish(full, fp, outcome)
            elif err is None or err.get("code") == "TRADE_REJECTED":
                self.idem.finish(full, fp, outcome)
            else:
                self.idem.release(full)
            return outcome


def _error(code: str, message: str) -> Dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def _describe(e: BaseException) -> str:
    text = str(e) or type(e).__name__
    return "%s: %s" % (type(e).__name__, text) if str(e) else text
