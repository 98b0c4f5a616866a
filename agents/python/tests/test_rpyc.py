"""The Wine path: the bridge reaches ``MetaTrader5`` through an RPyC classic
server (``--rpyc HOST:PORT``, alias ``--mt5linux``).

The server is a real ``rpyc_classic`` subprocess on loopback whose
``import MetaTrader5`` resolves to ``tests/rpyc_server/MetaTrader5.py``: the
fake terminal with named tuples of a module the test's side cannot import,
numpy structured arrays, and functions that refuse proxies as the package's
C functions do. The bridge's process never has a ``MetaTrader5`` module: every
test checks that the calls reached the server's fake.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator, Optional

import numpy as np
import pytest

from conftest import IN_CI, AgentThread, Gateway, free_port, settings_for, wait_for

if IN_CI:  # under CI nothing may be skipped: a missing rpyc is a failure
    import rpyc
else:
    rpyc = pytest.importorskip("rpyc")
from rpyc.core.netref import BaseNetref  # noqa: E402

from fake_mt5 import RATES_DTYPE, TICKS_DTYPE  # noqa: E402
from test_gateway import _agent_check, _assert_report, connected  # noqa: E402
from tradeterm_agent import rpyc_link  # noqa: E402
from tradeterm_agent.rpyc_link import RPYC_VERSION, RpycApi  # noqa: E402
from tradeterm_agent.terminal import load_api  # noqa: E402

TESTS = Path(__file__).resolve().parent
#: The command that starts the server (the same on the Windows side).
SERVER = [sys.executable, "-c", "from rpyc.cli.rpyc_classic import main; main()"]


class RpycServer:
    """``rpyc_classic --host 127.0.0.1 -p PORT`` in a subprocess, torn down by its PID."""

    def __init__(self, log_dir: Path, port: Optional[int] = None, with_mt5: bool = True) -> None:
        self.port = port or free_port()
        self.address = "127.0.0.1:%d" % self.port
        self.log_path = log_dir / ("rpyc-%d.log" % self.port)
        self.with_mt5 = with_mt5
        self.proc: Optional[subprocess.Popen] = None
        self._ctl: Any = None

    def start(self) -> "RpycServer":
        path = [str(TESTS / "rpyc_server"), str(TESTS)] if self.with_mt5 else [str(TESTS)]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(SERVER + ["--host", "127.0.0.1", "-p", str(self.port)], env=env,
                                     stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()

        def up() -> bool:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError("rpyc_classic exited: %s" % self.log_path.read_text()[-2000:])
            c = rpyc.classic.connect("127.0.0.1", self.port)
            c.close()
            return True

        wait_for(up, 20, "the RPyC server to listen", step=0.1)
        return self

    @property
    def ctl(self) -> Any:
        """The test's own classic connection (to steer and observe the server's fake)."""
        if self._ctl is None or self._ctl.closed:
            self._ctl = rpyc.classic.connect("127.0.0.1", self.port)
        return self._ctl

    def fake(self) -> Any:
        """The server's current ``FakeMT5`` (a netref)."""
        return self.ctl.modules.MetaTrader5._default()

    def execute(self, code: str) -> None:
        self.ctl.execute("import MetaTrader5\n" + code)

    def stop(self) -> None:
        if self._ctl is not None:
            try:
                self._ctl.close()
            except Exception:
                pass
            self._ctl = None
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RpycServer]:
    srv = RpycServer(tmp_path_factory.mktemp("rpyc")).start()
    yield srv
    srv.stop()


@pytest.fixture
def api(server: RpycServer) -> Iterator[RpycApi]:
    server.execute("MetaTrader5._reset()")
    a = load_api(rpyc=server.address)
    assert isinstance(a, RpycApi)
    assert a.initialize()
    yield a
    a.close()


def no_netrefs(x: Any) -> bool:
    """Nothing in ``x`` is an RPyC proxy (each access of one would be a round trip)."""
    if isinstance(x, BaseNetref):
        return False
    if isinstance(x, (tuple, list)):
        return all(no_netrefs(v) for v in x)
    if isinstance(x, dict):
        return all(no_netrefs(v) for v in x.values())
    if isinstance(x, np.ndarray):
        return x.base is None or not isinstance(x.base, BaseNetref)
    return True


def test_the_server_is_as_unfriendly_as_the_package(server: RpycServer) -> None:
    """Why the bridge does not use the module's proxies: every result is a
    netref, pickling one to this side fails (its class is in a module only the
    Windows side has), and the functions refuse a proxy of a local dict."""
    mt5 = server.ctl.modules.MetaTrader5
    info = mt5.account_info()
    assert isinstance(info, BaseNetref) and type(info).__name__ != "AccountInfo"
    # Records as the package's C core builds them: struct sequences, _asdict() but no _fields.
    assert not hasattr(info, "_fields") and info._asdict()["login"] == 5123456 and info.n_sequence_fields == 28
    rates = mt5.copy_rates_from_pos("EURUSD", mt5.TIMEFRAME_M1, 0, 10)
    assert isinstance(rates, BaseNetref)
    with pytest.raises(Exception):
        rpyc.classic.obtain(info)
    with pytest.raises(TypeError, match="unsupported argument"):
        mt5.order_check({"action": 1, "symbol": "EURUSD"})
    assert mt5.symbol_info("NOPE") is None and tuple(mt5.last_error()) == (-1, "Terminal: Call failed")
    assert "MetaTrader5" not in sys.modules


def test_results_are_local_copies_one_round_trip_each(server: RpycServer, api: RpycApi) -> None:
    fake = server.fake()
    assert api.server["MetaTrader5"].endswith("+fake") and api.server["module"].endswith("MetaTrader5.py")
    # Constants: read once on connecting, answered locally.
    assert (api.ORDER_TYPE_SELL, api.TIMEFRAME_H1, api.TRADE_RETCODE_DONE) == (1, 0x4000 | 1, 10009)
    assert getattr(api, "NO_SUCH_CONSTANT", None) is None
    calls = len(fake.calls)
    trips = api.round_trips

    a = api.account_info()
    assert type(a).__name__ == "AccountInfo" and a.login == 5123456 and a.currency == "USD" and no_netrefs(a)
    assert a._asdict()["trade_mode"] == api.ACCOUNT_TRADE_MODE_DEMO
    t = api.symbol_info_tick("EURUSD")
    assert type(t).__name__ == "Tick" and t.ask > t.bid > 0 and t.time_msc // 1000 == t.time
    rates = api.copy_rates_from_pos("EURUSD", api.TIMEFRAME_M1, 0, 1000)
    assert isinstance(rates, np.ndarray) and rates.dtype == RATES_DTYPE and len(rates) == 1000 and no_netrefs(rates)
    assert rates.dtype.names == ("time", "open", "high", "low", "close", "tick_volume", "spread", "real_volume")
    assert (np.diff(rates["time"]) == 60).all() and (rates["high"] >= rates["low"]).all()
    now = int(time.time())
    ticks = api.copy_ticks_range("EURUSD", now - 10, now, api.COPY_TICKS_ALL)
    assert isinstance(ticks, np.ndarray) and ticks.dtype == TICKS_DTYPE and len(ticks) >= 30
    assert api.positions_get() == ()
    # One round trip per call, whatever the size of the answer.
    assert api.round_trips - trips == 5
    assert len(fake.calls) - calls == 5
    assert "MetaTrader5" not in sys.modules


def test_requests_go_as_real_dicts_and_results_nest(server: RpycServer, api: RpycApi) -> None:
    tick = api.symbol_info_tick("EURUSD")
    request = {"action": api.TRADE_ACTION_DEAL, "symbol": "EURUSD", "volume": 0.1, "type": api.ORDER_TYPE_BUY,
               "price": tick.ask, "deviation": 10, "type_filling": api.ORDER_FILLING_IOC,
               "type_time": api.ORDER_TIME_GTC, "comment": "rpyc"}
    check = api.order_check(request)
    assert type(check).__name__ == "OrderCheckResult" and check.retcode == 0 and check.margin > 0
    r = api.order_send(request)
    assert r.retcode == api.TRADE_RETCODE_DONE and r.deal > 0 and r.volume == 0.1
    assert type(r.request).__name__ == "TradeRequest" and r.request.symbol == "EURUSD" and no_netrefs(r)
    [p] = api.positions_get(symbol="EURUSD")
    assert type(p).__name__ == "TradePosition" and p.ticket == r.order and p.comment == "rpyc"
    deals = api.history_deals_get(position=p.ticket)
    assert [d.entry for d in deals] == [api.DEAL_ENTRY_IN]
    assert len(server.fake().sent) == 1 and server.fake().sent[0]["comment"] == "rpyc"
    # A failure is None with last_error() from the server, as in process.
    assert api.symbol_info("NOPE") is None and api.last_error() == (-1, "Terminal: Call failed")
    assert api.copy_rates_from_pos("EURUSD", 12345, 0, 10) is None and api.last_error()[0] == -2
    # The package's own exceptions (bad arguments) are raised as in process.
    with pytest.raises(TypeError):
        api.initialize(1, 2)
    with pytest.raises(TypeError, match="cannot send object"):
        api.symbol_info(object())


def test_the_helper_reads_c_struct_sequences(monkeypatch: Any) -> None:
    """The package's records are C struct sequences (PyStructSequence, like
    os.stat_result): the server-side helper reads their field names from the
    type, with or without _asdict(), and this side gets named tuples."""
    import types

    monkeypatch.setitem(sys.modules, "MetaTrader5", types.ModuleType("MetaTrader5"))
    ns: dict = {}
    exec(rpyc_link.HELPER, ns)
    t = time.gmtime(86400)
    out = rpyc_link.decode(ns["_tt_out"](t))
    assert type(out).__name__ == "struct_time" and out.tm_year == 1970 and out.tm_yday == 2 and len(out) == 9
    st = rpyc_link.decode(ns["_tt_out"](("x", os.stat(__file__))))  # inside a container too
    assert st[1].st_size == os.stat(__file__).st_size
    rates = np.zeros(2, dtype=RATES_DTYPE)
    rates["close"] = [1.5, 2.5]
    back = rpyc_link.decode(ns["_tt_out"](rates))
    assert back.dtype == RATES_DTYPE and list(back["close"]) == [1.5, 2.5]
    assert rpyc_link.decode(ns["_tt_out"](np.int64(7))) == 7 and ns["_tt_out"]({"a": (1, 2)}) == ("D", (("a", ("S", (1, 2))),))


def test_arrays_without_numpy_on_this_side(server: RpycServer, api: RpycApi, monkeypatch: Any) -> None:
    with_np = api.copy_rates_from("EURUSD", api.TIMEFRAME_M5, int(time.time()) - 3600, 5)
    monkeypatch.setattr(rpyc_link, "USE_NUMPY", False)
    rows = api.copy_rates_from("EURUSD", api.TIMEFRAME_M5, int(time.time()) - 3600, 5)
    assert isinstance(rows, list) and len(rows) == 5 and isinstance(rows[0], rpyc_link.Record)
    assert [r["time"] for r in rows] == [int(x) for x in with_np["time"]]
    assert rows[0].close == float(with_np[0]["close"]) and rows[0][7] == int(with_np[0]["real_volume"])
    ticks = api.copy_ticks_from("EURUSD", int(time.time()) - 2, 4, api.COPY_TICKS_ALL)
    assert [t["time_msc"] for t in ticks] == sorted(t["time_msc"] for t in ticks) and ticks[0]["flags"] == 6
    # A padded layout (as numpy's aligned dtypes have) decodes by offsets.
    padded = np.zeros(3, dtype=np.dtype([("a", "<i4"), ("b", "<f8")], align=True))
    padded["a"], padded["b"] = [1, 2, 3], [0.5, 1.5, 2.5]
    layout = tuple((n, padded.dtype.fields[n][0].str, padded.dtype.fields[n][1]) for n in padded.dtype.names)
    out = rpyc_link.decode(("A", layout, padded.dtype.itemsize, 3, padded.tobytes()))
    assert [(r["a"], r["b"]) for r in out] == [(1, 0.5), (2, 1.5), (3, 2.5)]


def test_link_loss_is_a_terminal_outage_and_initialize_reconnects(tmp_path: Path) -> None:
    srv = RpycServer(tmp_path).start()
    try:
        api = load_api(rpyc=srv.address)
        assert api.initialize() and api.account_info() is not None and api.connections == 1
        srv.stop()
        assert api.account_info() is None
        code, text = api.last_error()
        assert code in (-10002, -10004) and srv.address in text, (code, text)
        assert api.positions_get() is None and api.last_error()[0] in (-10002, -10004)
        # Reconnecting is initialize()'s job (the bridge's poller calls it with backoff).
        assert api.initialize() is False
        code, text = api.last_error()
        assert code == -10004 and "unreachable" in text, text
        srv = RpycServer(tmp_path, port=srv.port).start()
        assert api.initialize() is True and api.connections == 2
        assert api.account_info().login == 5123456 and api.last_error() == (1, "Success")
        api.close()
    finally:
        srv.stop()


def test_clear_errors_at_start(tmp_path: Path) -> None:
    port = free_port()
    hint = r"unreachable.*rpyc_classic import main; main\(\)\" --host 127\.0\.0\.1 -p %d" % port
    with pytest.raises(RuntimeError, match=hint):
        load_api(rpyc="127.0.0.1:%d" % port)
    with pytest.raises(ValueError, match="HOST:PORT"):
        load_api(rpyc="localhost")
    # A server whose Python has no MetaTrader5.
    bare = RpycServer(tmp_path, with_mt5=False).start()
    try:
        with pytest.raises(RuntimeError, match="cannot import MetaTrader5.*pip install MetaTrader5"):
            load_api(rpyc=bare.address)
    finally:
        bare.stop()


def test_missing_rpyc_is_a_clear_error(monkeypatch: Any) -> None:
    monkeypatch.setitem(sys.modules, "rpyc", None)  # import rpyc → ImportError
    with pytest.raises(RuntimeError, match=r"needs the rpyc package.*rpyc==%s" % RPYC_VERSION.replace(".", r"\.")):
        load_api(rpyc="127.0.0.1:1")


# -- the bridge through the server, against the real gateway -------------------------------


def test_agent_check_through_rpyc(binary: Path, gateway: Gateway, server: RpycServer, tmp_path: Path) -> None:
    server.execute("MetaTrader5._reset()")
    api = load_api(rpyc=server.address)
    assert isinstance(api, RpycApi) and api.connected
    tid, key = gateway.create_terminal("kit-rpyc")
    agent = AgentThread(settings_for(gateway, key, tmp_path, allow_trading=True), api).start()
    try:
        agent.wait_connected()
        wait_for(lambda: connected(gateway, tid), 10, "the terminal to show as connected")
        assert agent.agent.term.api is api
        status, bars = gateway.rest("GET", "/market/bars/EURUSD?timeframe=M1&count=1000", terminal=tid)
        assert status == 200, bars
        assert len(bars["data"]["bars"]) == 1000
        report = _agent_check(binary, ["--gateway-url", gateway.gateway_base, "--master-key",
                                       gateway.creds["license_key"], "--terminal", tid])
        _assert_report(report, tid)
        fake = server.fake()
        # Everything went through the server: its fake saw the calls and the orders.
        assert len(fake.sent) > 0 and len(fake.checked) > 0
        assert {"account_info", "symbol_info_tick", "positions_get", "order_send"} <= set(fake.calls)
        assert api.round_trips > len(fake.sent)
        assert "MetaTrader5" not in sys.modules and type(api).__module__ == "tradeterm_agent.rpyc_link"
    finally:
        agent.stop()
        api.close()


def test_bridge_rides_out_a_server_restart(binary: Path, gateway: Gateway, tmp_path: Path) -> None:
    srv = RpycServer(tmp_path).start()
    api = load_api(rpyc=srv.address)
    tid, key = gateway.create_terminal("rpyc-restart")
    agent = AgentThread(settings_for(gateway, key, tmp_path, allow_trading=True), api).start()
    try:
        agent.wait_connected()
        sessions = agent.agent.sessions
        assert gateway.rest("GET", "/account/info", terminal=tid)[0] == 200
        srv.stop()
        status, body = gateway.rest("GET", "/account/info", terminal=tid)
        assert status == 502 and body["error"]["code"] == "DISPATCH_ERROR", body
        assert "RPyC link" in body["error"]["message"], body
        time.sleep(0.5)
        assert connected(gateway, tid) and agent.agent.sessions == sessions  # the gateway session stays up
        srv = RpycServer(tmp_path, port=srv.port).start()
        wait_for(lambda: gateway.rest("GET", "/account/info", terminal=tid)[0] == 200, 15,
                 "the bridge to reconnect the RPyC link")
        assert api.connections >= 2 and agent.agent.sessions == sessions
        wait_for(lambda: gateway.rest("POST", "/orders", {"symbol": "EURUSD", "order_type": "BUY", "volume": 0.1,
                                                          "dry_run": False}, terminal=tid)[0] == 200,
                 15, "live trading to come back")
        assert len(srv.fake().sent) == 1
    finally:
        agent.stop()
        api.close()
        srv.stop()


def test_cli_alias_mt5linux_uses_the_rpyc_link(gateway: Gateway, server: RpycServer, tmp_path: Path) -> None:
    server.execute("MetaTrader5._reset()")
    tid, key = gateway.create_terminal("cli-rpyc")
    env = dict(os.environ, TRADETERM_TERMINAL_KEY=key)
    env.pop("PYTHONPATH", None)  # nothing local to import: only the server has MetaTrader5
    proc = subprocess.Popen(
        [sys.executable, "-m", "tradeterm_agent", "--gateway", gateway.agent_url, "--mt5linux", server.address,
         "--symbols", "EURUSD", "--state-dir", str(tmp_path / "state"), "--poll-interval", "0.25"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: connected(gateway, tid), 15, "the CLI bridge to connect")
        status, body = gateway.rest("GET", "/market/tick/EURUSD", terminal=tid)
        assert status == 200 and body["data"]["symbol"] == "EURUSD"
        assert "symbol_info_tick" in set(server.fake().calls)
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=15)
    text = out.decode(errors="replace")
    assert "RPyC link to %s up" % server.address in text and key not in text
    # Unreachable at start: exit code 2 and what to do.
    run = subprocess.run([sys.executable, "-m", "tradeterm_agent", "--gateway", gateway.agent_url,
                          "--rpyc", "127.0.0.1:%d" % free_port()], env=env, capture_output=True, timeout=30)
    assert run.returncode == 2 and b"unreachable" in run.stderr and b"rpyc_classic" in run.stderr

