"""Unit tests of the mapping: MetaTrader5 calls and results → protocol objects and errors."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Dict

import pytest

import fake_mt5
from fake_mt5 import FakeMT5
from tradeterm_agent import commands as C
from tradeterm_agent import mapping as M
from tradeterm_agent.agent import Agent, Backoff, Settings, agent_url
from tradeterm_agent.constants import retcode_name
from tradeterm_agent.terminal import AgentError, Terminal


def setup(allow: bool = True, offset: int = 0, fake: Any = None):
    fake = fake or FakeMT5()
    term = Terminal(fake)
    assert term.initialize()
    return fake, term, C.Context(fake, M.TimeMap(offset), allow)


def run(term: Terminal, ctx: C.Context, cmd: Dict[str, Any]) -> Dict[str, Any]:
    return C.execute(term, ctx, cmd)


def err(term: Terminal, ctx: C.Context, cmd: Dict[str, Any]) -> AgentError:
    with pytest.raises(AgentError) as e:
        C.execute(term, ctx, cmd)
    return e.value


def order(**kw: Any) -> Dict[str, Any]:
    o = {"symbol": "EURUSD", "order_type": "BUY", "volume": 0.1}
    o.update(kw)
    return o


def test_retcode_names_follow_the_protocol() -> None:
    assert [retcode_name(c) for c in (10009, 10008, 10004, 10006, 10013, 10014, 10015, 10016, 10017, 10018,
                                      10019, 10027)] == [
        "done", "placed", "requote", "reject", "invalid", "invalid_volume", "invalid_price", "invalid_stops",
        "trade_disabled", "market_closed", "no_money", "client_disables_at"]
    assert retcode_name(99999) == "retcode_99999"


def test_filling_mode_is_one_the_symbol_allows() -> None:
    fake, term, ctx = setup()
    info = {n: fake.symbol_info(n) for n in ("EURUSD", "USDJPY")}
    fake.symbol_select("GBPUSD", True)
    info["GBPUSD"] = fake.symbol_info("GBPUSD")
    assert M.filling_for(fake, info["EURUSD"], pending=False) == fake.ORDER_FILLING_IOC  # IOC bit only
    assert M.filling_for(fake, info["USDJPY"], pending=False) == fake.ORDER_FILLING_FOK  # FOK bit
    assert M.filling_for(fake, info["GBPUSD"], pending=False) == fake.ORDER_FILLING_RETURN  # no bits
    assert M.filling_for(fake, info["EURUSD"], pending=True) == fake.ORDER_FILLING_RETURN
    # And the fake's trade server accepts each choice.
    for sym in ("EURUSD", "USDJPY", "GBPUSD"):
        assert run(term, ctx, {"cmd": "place_order", "order": order(symbol=sym)})["retcode"] == "done"


def test_time_conversions_and_offset() -> None:
    tm = M.TimeMap(7200)  # terminal clock 2 h ahead of UTC
    assert tm.ms_from_s(1_000_000) == (1_000_000 - 7200) * 1000
    assert tm.ms_from_msc(1_000_000_123) == 1_000_000_123 - 7_200_000
    assert tm.s_floor(1_500) == 1 + 7200 and tm.s_ceil(1_500) == 2 + 7200
    fake, term, ctx = setup(offset=3600)
    res = run(term, ctx, {"cmd": "tick", "symbol": "EURUSD"})
    raw = fake.symbol_info_tick("EURUSD")
    assert res["time"] == raw.time_msc - 3_600_000


def test_account_info_margin_level_and_trade_mode() -> None:
    fake, term, ctx = setup()
    a = run(term, ctx, {"cmd": "account_info"})
    assert a["margin_level"] is None and a["trade_mode"] == "demo" and a["free_margin"] == 10_000.0
    run(term, ctx, {"cmd": "place_order", "order": order()})
    a = run(term, ctx, {"cmd": "account_info"})
    assert a["margin"] > 0 and a["margin_level"] == pytest.approx(a["equity"] / a["margin"] * 100, rel=1e-3)
    fake.trade_mode = 7  # an undocumented value is never guessed
    assert err(term, ctx, {"cmd": "account_info"}).code == "INTERNAL"


def test_order_check_maps_retcodes_without_sending() -> None:
    fake, term, ctx = setup()
    ok = run(term, ctx, {"cmd": "order_check", "order": order()})
    assert ok["valid"] and ok["retcode"] == "done" and ok["margin"] > 0
    assert ok["price"] == fake.symbol_info_tick("EURUSD").ask or ok["price"] > 0
    bad = run(term, ctx, {"cmd": "order_check", "order": order(volume=0.001)})
    assert (bad["valid"], bad["retcode"]) == (False, "invalid_volume")
    fake.no_money = True
    assert run(term, ctx, {"cmd": "order_check", "order": order()})["retcode"] == "no_money"
    fake.no_money, fake.market_closed = False, True
    assert run(term, ctx, {"cmd": "order_check", "order": order()})["retcode"] == "market_closed"
    fake.market_closed, fake.invalid_stops = False, True
    assert run(term, ctx, {"cmd": "order_check", "order": order(stop_loss=1.0)})["retcode"] == "invalid_stops"
    assert fake.sent == []


def test_rejections_are_never_reported_as_done() -> None:
    fake, term, ctx = setup()
    for code, name in ((10006, "reject"), (10018, "market_closed"), (10019, "no_money"), (10016, "invalid_stops")):
        fake.reject_next = [code]
        e = err(term, ctx, {"cmd": "place_order", "order": order()})
        assert (e.code, e.retcode) == ("TRADE_REJECTED", name)
    assert fake.positions == {}
    fake.reject_next = [10027]  # autotrading disabled by client
    e = err(term, ctx, {"cmd": "place_order", "order": order()})
    assert (e.code, e.retcode) == ("TRADING_DISABLED", "client_disables_at")


def test_order_send_none_is_typed_from_last_error() -> None:
    fake, term, ctx = setup()

    def broken(request: Any) -> None:
        fake._err = (-10005, "IPC timeout")
        return None

    fake.order_send = broken  # type: ignore[method-assign]
    e = err(term, ctx, {"cmd": "place_order", "order": order()})
    assert e.code == "INTERNAL" and "-10005" in e.message and "IPC timeout" in e.message


def test_requote_is_retried_once_at_a_fresh_price() -> None:
    fake, term, ctx = setup()
    fake.reject_next = [10004]
    res = run(term, ctx, {"cmd": "place_order", "order": order(symbol="USDJPY")})
    assert res["retcode"] == "done" and len(fake.sent) == 2
    fake.reject_next = [10004, 10004]
    assert err(term, ctx, {"cmd": "place_order", "order": order(symbol="USDJPY")}).retcode == "requote"


def test_trading_switches_are_checked_before_sending() -> None:
    fake, term, ctx = setup(allow=False)
    assert err(term, ctx, {"cmd": "place_order", "order": order()}).code == "TRADING_DISABLED"
    fake, term, ctx = setup(allow=True)
    fake.algo_trading = False
    assert err(term, ctx, {"cmd": "close_position", "ticket": 1}).code == "TRADING_DISABLED"
    fake.algo_trading, fake.trade_expert = True, False
    assert err(term, ctx, {"cmd": "cancel_order", "ticket": 1}).code == "TRADING_DISABLED"
    assert "order_send" not in fake.calls


def test_disconnected_terminal_gives_typed_errors() -> None:
    fake, term, ctx = setup()
    fake.disconnected = True
    for cmd in ({"cmd": "account_info"}, {"cmd": "positions"}, {"cmd": "tick", "symbol": "EURUSD"},
                {"cmd": "place_order", "order": order()}):
        e = err(term, ctx, cmd)
        assert e.code == "INTERNAL" and "No IPC connection" in e.message, cmd
    assert not term.initialized
    fake.disconnected = False
    assert term.initialize() and run(term, ctx, {"cmd": "account_info"})["login"] == 5123456


def test_position_lifecycle_and_mapping() -> None:
    fake, term, ctx = setup()
    t = run(term, ctx, {"cmd": "place_order", "order": order(volume=0.3, magic=7, comment="a.b")})
    ticket = t["position"]
    assert ticket == t["order"] and t["deal"] > 0
    mod = run(term, ctx, {"cmd": "modify_position", "ticket": ticket, "stop_loss": 1.07, "take_profit": 1.1})
    assert mod["retcode"] == "done" and mod["position"] == ticket
    again = run(term, ctx, {"cmd": "modify_position", "ticket": ticket, "stop_loss": 1.07, "take_profit": 1.1})
    assert again["retcode"] == "done"  # no_changes is not a failure
    p = run(term, ctx, {"cmd": "positions", "symbol": "EURUSD"})["positions"][0]
    assert (p["side"], p["stop_loss"], p["take_profit"], p["magic"], p["comment"]) == ("buy", 1.07, 1.1, 7, "a.b")
    assert err(term, ctx, {"cmd": "close_position", "ticket": ticket, "volume": 0.5}).code == "INVALID_ARGUMENT"
    part = run(term, ctx, {"cmd": "close_position", "ticket": ticket, "volume": 0.1})
    assert part["volume"] == 0.1 and part["position"] == ticket
    assert fake.sent[-1]["type"] == fake.ORDER_TYPE_SELL and fake.sent[-1]["position"] == ticket
    rev = run(term, ctx, {"cmd": "reverse_position", "ticket": ticket})
    assert rev["close"]["volume"] == pytest.approx(0.2) and rev["open"]["volume"] == pytest.approx(0.2)
    ps = run(term, ctx, {"cmd": "positions"})["positions"]
    assert [(x["side"], x["volume"]) for x in ps] == [("sell", 0.2)]
    assert err(term, ctx, {"cmd": "close_position", "ticket": ticket}).code == "NOT_FOUND"
    now = int(time.time() * 1000)
    deals = run(term, ctx, {"cmd": "history_deals", "from": now - 60_000, "to": now + 60_000})["deals"]
    assert [(d["side"], d["entry"]) for d in deals] == [("buy", "in"), ("sell", "out"), ("sell", "out"),
                                                         ("sell", "in")]
    hist = run(term, ctx, {"cmd": "history_orders", "from": now - 60_000, "to": now + 60_000})["orders"]
    assert {o["state"] for o in hist} == {"filled"} and len(hist) == 4


def test_pending_orders() -> None:
    fake, term, ctx = setup()
    bid = fake.symbol_info_tick("EURUSD").bid
    bad = err(term, ctx, {"cmd": "place_order", "order": order(order_type="BUY_LIMIT", price=round(bid + 0.01, 5))})
    assert bad.retcode == "invalid_price"
    assert err(term, ctx, {"cmd": "place_order", "order": order(order_type="BUY_LIMIT")}).code == "INVALID_ARGUMENT"
    placed = run(term, ctx, {"cmd": "place_order", "order": order(order_type="BUY_LIMIT", price=round(bid - 0.01, 5))})
    assert placed["retcode"] == "placed" and placed["deal"] == 0
    assert fake.sent[-1]["action"] == fake.TRADE_ACTION_PENDING
    orders = run(term, ctx, {"cmd": "orders"})["orders"]
    assert [o["order_type"] for o in orders] == ["BUY_LIMIT"]
    cancel = run(term, ctx, {"cmd": "cancel_order", "ticket": placed["order"]})
    assert cancel["order"] == placed["order"] and run(term, ctx, {"cmd": "orders"})["orders"] == []
    assert err(term, ctx, {"cmd": "cancel_order", "ticket": placed["order"]}).code == "NOT_FOUND"


def test_bars_and_ticks_ranges_are_half_open() -> None:
    fake, term, ctx = setup()
    now = int(time.time()) // 60 * 60 * 1000
    bars = run(term, ctx, {"cmd": "bars", "symbol": "EURUSD", "timeframe": "M1", "from": now - 300_000, "to": now})
    assert [b["time"] for b in bars["bars"]] == [now - 300_000 + i * 60_000 for i in range(5)]
    last = run(term, ctx, {"cmd": "bars", "symbol": "EURUSD", "timeframe": "M1", "count": 3, "to": now})
    assert [b["time"] for b in last["bars"]] == [now - 180_000, now - 120_000, now - 60_000]
    recent = run(term, ctx, {"cmd": "bars", "symbol": "EURUSD", "timeframe": "H1", "count": 2})["bars"]
    assert len(recent) == 2 and recent[1]["time"] - recent[0]["time"] == 3_600_000
    ticks = run(term, ctx, {"cmd": "ticks", "symbol": "EURUSD", "from": now - 2_000, "to": now})["ticks"]
    assert [t["time"] for t in ticks] == list(range(now - 2_000, now, 250))
    lim = run(term, ctx, {"cmd": "ticks", "symbol": "EURUSD", "from": now - 2_000, "to": now, "limit": 2})["ticks"]
    assert [t["time"] for t in lim] == [now - 500, now - 250]
    assert err(term, ctx, {"cmd": "ticks", "symbol": "EURUSD", "from": 5, "to": 1}).code == "INVALID_ARGUMENT"


def test_symbol_spec_and_selection() -> None:
    fake, term, ctx = setup()
    assert fake.symbol_info("GBPUSD") is None  # not in Market Watch yet
    spec = run(term, ctx, {"cmd": "symbol_spec", "symbol": "GBPUSD"})
    assert fake.selected["GBPUSD"] and spec["digits"] == 5 and spec["sessions"] == []
    jpy = run(term, ctx, {"cmd": "symbol_spec", "symbol": "USDJPY"})
    # tick_value in the profit currency (JPY): tick_size * contract_size.
    assert jpy["tick_value"] == pytest.approx(100.0) and jpy["margin_mode"] == "forex"
    assert jpy["swap_mode"] == "points" and jpy["swap_triple_day"] == 3 and jpy["stops_level"] == 20


def test_deal_comment_for_stops_and_balance_side() -> None:
    fake = FakeMT5()
    d = fake_mt5.TradeDeal(ticket=1, order=2, time=10, time_msc=10_500, type=1, entry=1, magic=0, position_id=3,
                           reason=fake.DEAL_REASON_SL, volume=0.1, price=1.1, commission=-0.5, swap=0.0, profit=-3.0,
                           fee=-0.1, symbol="EURUSD", comment="[sl 1.1]", external_id="")
    m = M.deal(fake, M.TimeMap(), d)
    assert (m["side"], m["entry"], m["comment"], m["time"]) == ("sell", "out", "sl", 10_500)
    assert m["commission"] == pytest.approx(-0.6)
    b = M.deal(fake, M.TimeMap(), d._replace(type=fake.DEAL_TYPE_BALANCE, profit=-50.0, reason=0))
    assert (b["entry"], b["side"]) == ("balance", "sell")


def test_urls_and_backoff() -> None:
    assert agent_url("ws://h:1") == "ws://h:1/agent/v1"
    assert agent_url("https://h:1/") == "wss://h:1/agent/v1"
    assert agent_url("wss://h:1/agent/v1") == "wss://h:1/agent/v1"
    with pytest.raises(ValueError):
        agent_url("ftp://h")
    b = Backoff(0.1, 1.0)
    waits = [b.next() for _ in range(8)]
    assert all(w <= 1.0 for w in waits) and waits[-1] >= 0.5 and waits[0] <= 0.1


def _agent(tmp_path: Any, fake: FakeMT5) -> Agent:
    s = Settings(gateway_url="ws://127.0.0.1:1", terminal_key="tt_term_x", allow_trading=True,
                 state_dir=tmp_path / "state")
    agent = Agent(s, fake)
    agent.term.initialize()
    return agent


def test_idempotency_survives_a_restart(tmp_path: Any) -> None:
    fake = FakeMT5()
    cmd = {"cmd": "place_order", "order": dict(order(), idempotency_key="k-1")}

    async def scenario() -> None:
        a1 = _agent(tmp_path, fake)
        first = await a1._outcome(cmd)
        again = await a1._outcome(cmd)
        assert first == again and first["result"]["retcode"] == "done"
        a1.term.close()
        a2 = _agent(tmp_path, fake)  # a new process with the same state dir
        assert await a2._outcome(cmd) == first
        other = {"cmd": "place_order", "order": dict(order(volume=0.2), idempotency_key="k-1")}
        assert (await a2._outcome(other))["error"]["code"] == "INVALID_ARGUMENT"
        # A rejection is a definite outcome: kept too.
        fake.reject_next = [10019]
        rej = {"cmd": "close_position", "ticket": first["result"]["position"], "idempotency_key": "k-2"}
        r1 = await a2._outcome(rej)
        assert r1["error"]["retcode"] == "no_money"
        assert await a2._outcome(rej) == r1
        a2.term.close()

    asyncio.run(scenario())
    assert len(fake.sent) == 2


def test_interrupted_idempotent_order_is_not_sent_again(tmp_path: Any) -> None:
    fake = FakeMT5()
    cmd = {"cmd": "place_order", "order": dict(order(), idempotency_key="k-crash")}

    async def scenario() -> None:
        a1 = _agent(tmp_path, fake)
        a1.idem.begin("place_order:k-crash", "fp")  # the process dies with the order out...
        a1.term.close()
        a2 = _agent(tmp_path, fake)
        a2.idem.entries["place_order:k-crash"]["fp"] = __import__("hashlib").sha256(
            __import__("json").dumps(cmd, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
        out = await a2._outcome(cmd)
        assert out["error"]["code"] == "INTERNAL" and "unknown" in out["error"]["message"]
        a2.term.close()

    asyncio.run(scenario())
    assert fake.sent == []


def test_an_ipc_timeout_during_order_send_is_never_retried(tmp_path: Any) -> None:
    fake = FakeMT5()
    attempts = []

    def timeout(request: Any) -> None:
        attempts.append(request)
        fake._err = (-10005, "IPC timeout")
        return None

    fake.order_send = timeout  # type: ignore[method-assign]
    cmd = {"cmd": "place_order", "order": dict(order(), idempotency_key="k-timeout")}

    async def scenario() -> None:
        a = _agent(tmp_path, fake)
        first = await a._outcome(cmd)
        assert first["error"]["code"] == "INTERNAL" and "outcome unknown" in first["error"]["message"]
        assert await a._outcome(cmd) == first
        # Without a key the bridge cannot know it is a retry: it sends again.
        plain = {"cmd": "place_order", "order": order()}
        assert (await a._outcome(plain))["error"]["code"] == "INTERNAL"
        a.term.close()

    asyncio.run(scenario())
    assert len(attempts) == 2


def test_rate_and_tick_records_by_name_or_documented_position() -> None:
    fake = FakeMT5()
    arr = fake.copy_rates_from_pos("EURUSD", fake.TIMEFRAME_M1, 0, 2)
    assert arr.dtype.names == ("time", "open", "high", "low", "close", "tick_volume", "spread", "real_volume")
    by_name = [M.bar_record(M.TimeMap(), r) for r in arr]
    by_pos = [M.bar_record(M.TimeMap(), tuple(r.tolist())) for r in arr]
    assert by_name == by_pos and by_name[0]["time"] == int(arr[0]["time"]) * 1000
    ticks = fake.copy_ticks_range("EURUSD", int(time.time()) - 2, int(time.time()), fake.COPY_TICKS_ALL)
    assert ticks.dtype.names == ("time", "bid", "ask", "last", "volume", "time_msc", "flags", "volume_real")
    t = ticks[0]
    assert M.tick_record(M.TimeMap(), "EURUSD", t) == M.tick_record(M.TimeMap(), "EURUSD", tuple(t.tolist()))
    assert M.tick_record(M.TimeMap(), "EURUSD", t)["time"] == int(t["time_msc"])


def test_stop_limit_orders_expiration_and_filling() -> None:
    fake, term, ctx = setup()
    ask = fake.symbol_info_tick("EURUSD").ask
    stop, limit = round(ask + 0.01, 5), round(ask + 0.005, 5)
    # The stop-limit price is required, and must lie below a buy stop limit's stop.
    assert err(term, ctx, {"cmd": "place_order", "order": order(order_type="BUY_STOP_LIMIT", price=stop)}).code == (
        "INVALID_ARGUMENT")
    bad = err(term, ctx, {"cmd": "place_order", "order": order(
        order_type="BUY_STOP_LIMIT", price=stop, stop_limit_price=round(stop + 0.001, 5))})
    assert bad.retcode == "invalid_price"
    expiry_ms = (int(fake.clock()) + 3600) * 1000
    placed = run(term, ctx, {"cmd": "place_order", "order": order(
        order_type="BUY_STOP_LIMIT", price=stop, stop_limit_price=limit, expiration_mode="SPECIFIED",
        expiration=expiry_ms, filling="RETURN")})
    assert placed["retcode"] == "placed"
    sent = fake.sent[-1]
    assert (sent["type"], sent["stoplimit"]) == (fake.ORDER_TYPE_BUY_STOP_LIMIT, limit)
    assert (sent["type_time"], sent["expiration"]) == (fake.ORDER_TIME_SPECIFIED, expiry_ms // 1000)
    assert sent["type_filling"] == fake.ORDER_FILLING_RETURN
    (o,) = run(term, ctx, {"cmd": "orders"})["orders"]
    assert (o["order_type"], o["stop_limit_price"]) == ("BUY_STOP_LIMIT", limit)
    assert (o["expiration_mode"], o["expiration"]) == ("SPECIFIED", expiry_ms)
    # An expiry in the past is refused by the terminal.
    past = err(term, ctx, {"cmd": "place_order", "order": order(
        order_type="BUY_LIMIT", price=round(ask - 0.01, 5), expiration_mode="SPECIFIED",
        expiration=(int(fake.clock()) - 60) * 1000)})
    assert past.retcode == "invalid_expiration"
    # The symbol's modes in its spec: EURUSD is market execution with IOC only.
    spec = run(term, ctx, {"cmd": "symbol_spec", "symbol": "EURUSD"})
    assert spec["filling_modes"] == ["IOC"]
    assert spec["expiration_modes"] == ["GTC", "DAY", "SPECIFIED", "SPECIFIED_DAY"]
    assert run(term, ctx, {"cmd": "symbol_spec", "symbol": "USDJPY"})["filling_modes"] == ["FOK", "RETURN"]
    fok = err(term, ctx, {"cmd": "place_order", "order": order(filling="FOK")})
    assert fok.retcode == "invalid_fill"


def test_modify_order_sends_trade_action_modify_and_reads_back() -> None:
    fake, term, ctx = setup()
    bid = fake.symbol_info_tick("EURUSD").bid
    placed = run(term, ctx, {"cmd": "place_order", "order": order(order_type="BUY_LIMIT", price=round(bid - 0.01, 5))})
    new = round(bid - 0.02, 5)
    r = run(term, ctx, {"cmd": "modify_order", "ticket": placed["order"], "price": new,
                        "stop_loss": round(new - 0.01, 5), "expiration_mode": "DAY"})
    assert (r["kind"], r["retcode"], r["order"], r["price"]) == ("trade", "done", placed["order"], new)
    assert fake.sent[-1]["action"] == fake.TRADE_ACTION_MODIFY
    (o,) = run(term, ctx, {"cmd": "orders"})["orders"]
    assert (o["price"], o["stop_loss"], o["take_profit"], o["expiration_mode"]) == (
        new, round(new - 0.01, 5), None, "DAY")
    same = err(term, ctx, {"cmd": "modify_order", "ticket": placed["order"], "price": new,
                           "stop_loss": round(new - 0.01, 5), "expiration_mode": "DAY"})
    assert same.retcode == "no_changes"
    wrong = err(term, ctx, {"cmd": "modify_order", "ticket": placed["order"], "price": round(bid + 0.01, 5)})
    assert wrong.retcode == "invalid_price"
    assert err(term, ctx, {"cmd": "modify_order", "ticket": 999, "price": new}).code == "NOT_FOUND"
    # order_send with a request it cannot read is None + last_error, never a result.
    assert fake.order_send({"action": fake.TRADE_ACTION_MODIFY, "order": "x"}) is None
    assert fake.last_error()[0] == fake.RES_E_INVALID_PARAMS


def test_close_by_on_a_hedging_account_and_refused_on_netting() -> None:
    fake, term, ctx = setup()
    long = run(term, ctx, {"cmd": "place_order", "order": order(volume=0.3)})
    short = run(term, ctx, {"cmd": "place_order", "order": order(order_type="SELL", volume=0.1)})
    r = run(term, ctx, {"cmd": "close_by", "ticket": long["position"], "ticket_by": short["position"]})
    assert (r["retcode"], r["position"], r["volume"]) == ("done", long["position"], 0.1)
    assert fake.sent[-1]["action"] == fake.TRADE_ACTION_CLOSE_BY
    positions = run(term, ctx, {"cmd": "positions"})["positions"]
    assert [(p["ticket"], p["volume"]) for p in positions] == [(long["position"], 0.2)]
    # The history as MetaTrader 5 keeps it: one order of type CLOSE_BY and one
    # out_by deal per position, both at the opening price of the one closed by.
    now = int(time.time() * 1000)
    deals = run(term, ctx, {"cmd": "history_deals", "from": now - 60_000, "to": now + 60_000})["deals"]
    by_deals = [d for d in deals if d["entry"] == "out_by"]
    assert sorted(d["position"] for d in by_deals) == sorted([long["position"], short["position"]])
    assert {d["price"] for d in by_deals} == {short["price"]}
    assert [d["entry"] for d in deals if d["entry"] != "out_by"] == ["in", "in"]
    hist = run(term, ctx, {"cmd": "history_orders", "from": now - 60_000, "to": now + 60_000})["orders"]
    close_by = [o for o in hist if o["order_type"] == "CLOSE_BY"]
    assert len(close_by) == 1 and close_by[0]["state"] == "filled" and close_by[0]["volume"] == 0.1
    assert {d["order"] for d in by_deals} == {close_by[0]["ticket"]}
    assert run(term, ctx, {"cmd": "orders"})["orders"] == []
    assert err(term, ctx, {"cmd": "close_by", "ticket": long["position"], "ticket_by": 999}).code == "NOT_FOUND"
    netting = FakeMT5()
    netting.account_info = lambda: fake.account_info()._replace(margin_mode=fake.ACCOUNT_MARGIN_MODE_RETAIL_NETTING)
    _, nterm, nctx = setup(fake=netting)
    refused = err(nterm, nctx, {"cmd": "close_by", "ticket": 1, "ticket_by": 2})
    assert (refused.code, refused.retcode) == ("TRADE_REJECTED", "invalid_request")


def test_market_book_add_get_release() -> None:
    fake, term, ctx = setup()
    assert err(term, ctx, {"cmd": "market_book_get", "symbol": "EURUSD"}).code == "INTERNAL"
    assert run(term, ctx, {"cmd": "market_book_add", "symbol": "EURUSD"}) == {
        "kind": "market_book_subscription", "symbol": "EURUSD", "subscribed": True}
    book = run(term, ctx, {"cmd": "market_book_get", "symbol": "EURUSD"})
    assert book["kind"] == "market_book"
    levels = book["levels"]
    assert [lv["type"] for lv in levels] == ["sell"] * 3 + ["buy"] * 3
    assert all(a["price"] > b["price"] for a, b in zip(levels, levels[1:]))
    tick = fake.symbol_info_tick("EURUSD")
    assert (levels[2]["price"], levels[3]["price"]) == (tick.ask, tick.bid)
    assert levels[0]["volume"] == 30.0
    assert run(term, ctx, {"cmd": "market_book_release", "symbol": "EURUSD"})["subscribed"] is False
    assert err(term, ctx, {"cmd": "market_book_add", "symbol": "NOPE"}).code == "NOT_FOUND"
