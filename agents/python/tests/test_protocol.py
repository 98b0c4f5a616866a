"""The bridge against a scripted gateway (a websockets server in the test):
hello, heartbeats while the terminal is slow, requests answered concurrently,
tick refresh, permissions events, protocol errors."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any, Dict, List

from websockets.asyncio.server import serve

from fake_mt5 import FakeMT5
from tradeterm_agent.agent import Agent, Settings

FIXED = 1_795_000_000.0  # a frozen clock: quotes never change


class Script:
    """A gateway that records every frame of one agent connection."""

    def __init__(self, hb_ms: int = 10_000) -> None:
        self.hb_ms = hb_ms
        self.hello: Dict[str, Any] = {}
        self.frames: List[Any] = []  # (monotonic, frame)
        self.ws: Any = None
        self.connected: Any = None  # an asyncio.Event, made inside the loop (Python 3.9)

    async def handler(self, ws: Any) -> None:
        self.hello = json.loads(await ws.recv())
        await ws.send(json.dumps({"type": "welcome", "protocol_version": 1, "terminal_id": "term_test",
                                  "heartbeat_interval_ms": self.hb_ms, "heartbeat_timeout_ms": 30_000}))
        self.ws = ws
        self.connected.set()
        async for raw in ws:
            self.frames.append((time.monotonic(), json.loads(raw)))

    def of(self, kind: str) -> List[Any]:
        return [(t, f) for t, f in self.frames if f.get("type") == kind]

    def events(self, kind: str) -> List[Any]:
        return [(t, f["event"]) for t, f in self.of("event") if f["event"]["kind"] == kind]

    def response(self, rid: str) -> Any:
        for _, f in self.of("response"):
            if f["id"] == rid:
                return f
        return None

    async def request(self, rid: str, command: Dict[str, Any]) -> None:
        await self.ws.send(json.dumps({"type": "request", "id": rid, "timeout_ms": 10_000, "command": command}))

    async def wait(self, pred: Any, timeout: float = 5.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            v = pred()
            if v:
                return v
            await asyncio.sleep(0.02)
        raise AssertionError("timed out; frames: %s" % [f for _, f in self.frames][-20:])


async def with_agent(script: Script, fake: FakeMT5, body: Any, tmp_path: Any, **kw: Any) -> None:
    script.connected = asyncio.Event()
    async with serve(script.handler, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        settings = Settings(gateway_url="ws://127.0.0.1:%d" % port, terminal_key="tt_term_test",
                            state_dir=tmp_path, **kw)
        agent = Agent(settings, fake)
        stop = asyncio.Event()
        task = asyncio.ensure_future(agent.run(stop))
        try:
            await asyncio.wait_for(script.connected.wait(), 5)
            await body(agent)
        finally:
            stop.set()
            await asyncio.wait_for(task, 5)


def test_hello_reports_the_terminal_truthfully(tmp_path: Any) -> None:
    fake = FakeMT5(clock=lambda: FIXED)
    fake.trade_mode = fake.ACCOUNT_TRADE_MODE_CONTEST
    script = Script()

    async def body(agent: Agent) -> None:
        h = script.hello
        assert h["type"] == "hello" and h["protocol_version"] == 1
        assert h["terminal_key"] == "tt_term_test"
        assert h["terminal"]["platform"] == "MT5" and h["terminal"]["build"] == 4755
        assert 1 <= len(h["terminal"]["uid"]) <= 256
        assert h["account"] == {"login": 5123456, "server": "FakeBroker-Demo", "company": "Fake Broker Ltd",
                                "currency": "USD", "leverage": 100, "trade_mode": "contest"}
        # allow_trading defaults to off; the terminal's switches are on.
        assert h["permissions"] == {"allow_trading": False, "automated_trading": True}
        assert h["agent"]["name"] == "tradeterm-agent-python"

    asyncio.run(with_agent(script, fake, body, tmp_path))


def test_heartbeats_continue_while_the_terminal_blocks(tmp_path: Any) -> None:
    fake = FakeMT5(clock=lambda: FIXED)
    script = Script(hb_ms=200)

    async def body(agent: Agent) -> None:
        await asyncio.sleep(0.3)  # the first snapshot poll has run
        fake.delay = 1.5  # every terminal call now blocks 1.5 s
        start = time.monotonic()
        await script.request("slow", {"cmd": "account_info"})
        resp = await script.wait(lambda: script.response("slow"), timeout=10)
        took = time.monotonic() - start
        fake.delay = 0.0
        assert resp["result"]["kind"] == "account_info"
        assert took >= 1.4
        pings = [t for t, _ in script.of("ping") if start <= t <= start + took]
        assert len(pings) >= 4, "only %d pings during a %.1f s terminal call" % (len(pings), took)

    asyncio.run(with_agent(script, fake, body, tmp_path, poll_interval=30.0, symbols=[]))


def test_requests_errors_ticks_and_permissions(tmp_path: Any) -> None:
    fake = FakeMT5(clock=lambda: FIXED)
    script = Script()

    async def body(agent: Agent) -> None:
        ws = script.ws
        await ws.send(json.dumps({"type": "ping", "ts": 123}))
        await ws.send("not json")
        await ws.send(json.dumps({"type": "bogus"}))
        reqs = {
            "cal": {"cmd": "calendar", "from": 0, "to": 1},
            "unk": {"cmd": "bogus"},
            "gbp": {"cmd": "tick", "symbol": "GBPUSD"},
            "live": {"cmd": "place_order", "order": {"symbol": "EURUSD", "order_type": "BUY", "volume": 0.1}},
            "nosym": {"cmd": "symbol_spec", "symbol": "NOPE"},
            "both": {"cmd": "bars", "symbol": "EURUSD", "timeframe": "H1", "count": 5, "from": 0},
            "tf": {"cmd": "bars", "symbol": "EURUSD", "timeframe": "H2", "count": 5},
        }
        for rid, cmd in reqs.items():
            await script.request(rid, cmd)
        await script.wait(lambda: all(script.response(r) for r in reqs))
        code = {r: (script.response(r).get("error") or {}).get("code") for r in reqs}
        assert code == {"cal": "NOT_SUPPORTED", "unk": "UNKNOWN_COMMAND", "gbp": None, "live": "TRADING_DISABLED",
                        "nosym": "NOT_FOUND", "both": "INVALID_ARGUMENT", "tf": "INVALID_ARGUMENT"}
        assert script.response("gbp")["result"]["kind"] == "tick"
        assert "order_send" not in fake.calls and fake.sent == []
        assert [f["ts"] for _, f in script.of("pong")] == [123]
        errors = sorted(f["code"] for _, f in script.of("error"))
        assert errors == ["MALFORMED_FRAME", "UNKNOWN_FRAME"]

        # Quotes are frozen: the unchanged quote is still re-sent at least every 500 ms,
        # for the configured symbol and for the one asked about.
        t0 = time.monotonic()
        await asyncio.sleep(1.6)
        for sym in ("EURUSD", "GBPUSD"):
            times = [t for t, e in script.events("tick") if e["symbol"] == sym and t >= t0]
            assert len(times) >= 3, sym
            gaps = [b - a for a, b in zip(times, times[1:])]
            assert max(gaps) <= 0.5, gaps
            quote_times = {e["time"] for _, e in script.events("tick") if e["symbol"] == sym}
            assert len(quote_times) == 1  # the time of the last change, not of the refresh

        # The Algo Trading button goes off → a permissions event.
        fake.algo_trading = False
        ev = await script.wait(lambda: script.events("permissions"))
        assert ev[-1][1] == {"kind": "permissions", "allow_trading": False, "automated_trading": False}

    asyncio.run(with_agent(script, fake, body, tmp_path, symbols=["EURUSD"], poll_interval=0.1,
                           tick_interval=0.05))


def test_trade_events_are_pushed(tmp_path: Any) -> None:
    fake = FakeMT5()
    script = Script()

    async def body(agent: Agent) -> None:
        await asyncio.sleep(0.3)  # baseline snapshot
        await script.request("buy", {"cmd": "place_order", "order": {
            "symbol": "EURUSD", "order_type": "BUY", "volume": 0.1, "comment": "v1.2 entry..."}})
        resp = await script.wait(lambda: script.response("buy"))
        trade = resp["result"]
        assert trade["retcode"] == "done" and trade["position"] > 0
        ev = await script.wait(lambda: [e for _, e in script.events("trade_transaction")
                                        if e["transaction"] == "deal_added"])
        assert ev[0]["deal"]["ticket"] == trade["deal"] and ev[0]["deal"]["entry"] == "in"
        assert ev[0]["position"] == trade["position"]
        assert fake.sent[0]["comment"] == "v1.2 entry..."  # dots passed through unchanged
        acc = await script.wait(lambda: script.events("account"))
        assert acc[-1][1]["margin"] > 0

    asyncio.run(with_agent(script, fake, body, tmp_path, allow_trading=True, poll_interval=0.1, symbols=[]))


def test_configured_symbols_are_selected_and_unknown_ones_dropped(tmp_path: Any) -> None:
    fake = FakeMT5(clock=lambda: FIXED)
    script = Script()
    assert not fake.selected["GBPUSD"]

    async def body(agent: Agent) -> None:
        ticks = await script.wait(lambda: [e for _, e in script.events("tick") if e["symbol"] == "GBPUSD"])
        assert ticks[0]["bid"] > 0 and fake.selected["GBPUSD"]
        await script.wait(lambda: "NOPE" not in agent.streamed())
        assert agent.streamed() == ["GBPUSD"]

    asyncio.run(with_agent(script, fake, body, tmp_path, symbols=["GBPUSD", "NOPE"], tick_interval=0.05))


def test_empty_lists_reported_as_none_with_success_are_empty(tmp_path: Any) -> None:
    """Some builds answer None with last_error() (1, 'Success') when nothing matches."""
    from tradeterm_agent import commands as C
    from tradeterm_agent import mapping as M
    from tradeterm_agent.terminal import Terminal

    fake = FakeMT5()
    fake.positions_get = lambda **kw: None  # type: ignore[method-assign]
    fake.history_deals_get = lambda *a, **kw: None  # type: ignore[method-assign]
    term = Terminal(fake)
    term.initialize()
    ctx = C.Context(fake, M.TimeMap(), False)
    assert C.execute(term, ctx, {"cmd": "positions"}) == {"kind": "positions", "positions": []}
    assert C.execute(term, ctx, {"cmd": "history_deals", "from": 0, "to": 10})["deals"] == []
    fake.disconnected = True
    fake.account_info()  # last_error is now (-10004, 'No IPC connection')
    try:
        C.execute(term, ctx, {"cmd": "positions"})
        raise AssertionError("expected an error")
    except C.AgentError as e:
        assert e.code == "INTERNAL" and "-10004" in e.message
