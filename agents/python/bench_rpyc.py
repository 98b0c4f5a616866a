#!/usr/bin/env python3
"""Latency of MetaTrader5 calls in process vs through RPyC (the Wine path).

Runs each call N times against the fake terminal (``tests/fake_mt5.py``):

- **in process**: a ``FakeMT5()`` called directly (what the bridge does with
  the ``MetaTrader5`` module on Windows);
- **rpyc**: the bridge's :class:`tradeterm_agent.rpyc_link.RpycApi` through an
  RPyC classic server on loopback whose ``MetaTrader5`` is the same fake
  (one round trip per call, the result copied once);
- **naive proxies** (for comparison, fewer runs): the server's module used
  through plain netrefs, reading the fields the bridge reads one by one (each
  read a round trip), as a client that does not copy would.

Prints median and p95 in milliseconds as a Markdown table. Usage (in the
project's venv, ``agents/python/.venv/bin/python``)::

    python bench_rpyc.py [-n 300] [--rpyc HOST:PORT]

Without ``--rpyc`` it starts ``rpyc_classic`` on a free loopback port with
``PYTHONPATH=tests/rpyc_server:tests`` and stops it at the end. With
``--rpyc`` it measures an existing server (whose ``MetaTrader5`` may be the
real package: then the in-process column is still the fake).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "tests"))
sys.path.insert(0, str(HERE / "src"))

from fake_mt5 import FakeMT5  # noqa: E402
from tradeterm_agent.rpyc_link import RpycApi, connect  # noqa: E402

BARS = 1000
ACCOUNT_FIELDS = ("login", "name", "server", "company", "currency", "leverage", "trade_mode", "balance", "equity",
                  "margin", "margin_free", "margin_level", "profit")
POSITION_FIELDS = ("ticket", "symbol", "type", "volume", "price_open", "time_msc", "sl", "tp", "price_current",
                   "swap", "profit", "magic", "comment")
BAR_FIELDS = ("time", "open", "high", "low", "close", "tick_volume")


def start_server() -> Tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE / "tests" / "rpyc_server"), str(HERE / "tests")]))
    proc = subprocess.Popen([sys.executable, "-c", "from rpyc.cli.rpyc_classic import main; main()",
                             "--host", "127.0.0.1", "-p", str(port), "--quiet"], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return proc, "127.0.0.1:%d" % port
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("rpyc_classic did not start")


def measure(fn: Callable[[], Any], n: int) -> Tuple[float, float]:
    for _ in range(min(10, max(1, n // 5))):  # warm-up
        fn()
    samples: List[float] = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000.0)
    samples.sort()
    return statistics.median(samples), samples[min(len(samples) - 1, int(round(0.95 * (len(samples) - 1))))]


def open_positions(api: Any, count: int = 5) -> None:
    for _ in range(count):
        t = api.symbol_info_tick("EURUSD")
        api.order_send({"action": api.TRADE_ACTION_DEAL, "symbol": "EURUSD", "volume": 0.01,
                        "type": api.ORDER_TYPE_BUY, "price": t.ask, "deviation": 20,
                        "type_filling": api.ORDER_FILLING_IOC})


def calls(api: Any) -> Dict[str, Callable[[], Any]]:
    tf = api.TIMEFRAME_M1
    return {
        "symbol_info_tick": lambda: api.symbol_info_tick("EURUSD"),
        "account_info": lambda: api.account_info(),
        "copy_rates_from_pos (%d bars)" % BARS: lambda: api.copy_rates_from_pos("EURUSD", tf, 0, BARS),
        "positions_get (5 positions)": lambda: api.positions_get(),
    }


def naive_calls(mt5: Any) -> Dict[str, Callable[[], Any]]:
    tf = mt5.TIMEFRAME_M1

    def tick() -> Any:
        t = mt5.symbol_info_tick("EURUSD")
        return (t.bid, t.ask, t.time_msc)

    def account() -> Any:
        a = mt5.account_info()
        return [getattr(a, f) for f in ACCOUNT_FIELDS]

    def rates() -> Any:
        arr = mt5.copy_rates_from_pos("EURUSD", tf, 0, BARS)
        return [[r[f] for f in BAR_FIELDS] for r in arr]

    def positions() -> Any:
        return [[getattr(p, f) for f in POSITION_FIELDS] for p in mt5.positions_get()]

    return {
        "symbol_info_tick": tick,
        "account_info": account,
        "copy_rates_from_pos (%d bars)" % BARS: rates,
        "positions_get (5 positions)": positions,
    }


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-n", type=int, default=300, help="runs per call (default 300)")
    p.add_argument("--naive-n", type=int, default=5, help="runs per call through naive proxies (default 5)")
    p.add_argument("--rpyc", metavar="HOST:PORT", help="an existing RPyC classic server (default: start one)")
    args = p.parse_args(argv)

    proc = None
    address = args.rpyc
    if not address:
        proc, address = start_server()
    try:
        local = FakeMT5()
        open_positions(local)
        remote: RpycApi = connect(address)
        if not remote.initialize():
            raise SystemExit("initialize() failed: %r" % (remote.last_error(),))
        if not args.rpyc:
            remote.invoke("positions_get")  # warm the link
            open_positions(remote)
        import rpyc

        raw = rpyc.classic.connect(remote.host, remote.port)
        mt5 = raw.modules.MetaTrader5

        rows = []
        lc, rc, nc = calls(local), calls(remote), naive_calls(mt5)
        for name in lc:
            l_med, l_p95 = measure(lc[name], args.n)
            r_med, r_p95 = measure(rc[name], args.n)
            n_med, n_p95 = measure(nc[name], args.naive_n)
            rows.append((name, l_med, l_p95, r_med, r_p95, n_med, n_p95))
        raw.close()
        remote.close()
    finally:
        if proc is not None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()

    print("Python %s, rpyc %s, %d runs per call (naive proxies: %d), server %s%s"
          % (sys.version.split()[0], rpyc.__version__, args.n, args.naive_n, address,
             " (started here, fake terminal)" if proc else ""))
    print()
    print("| call | in process median / p95 (ms) | RPyC median / p95 (ms) | RPyC added, median (ms) "
          "| naive proxies median / p95 (ms) |")
    print("|---|---|---|---|---|")
    for name, l_med, l_p95, r_med, r_p95, n_med, n_p95 in rows:
        print("| `%s` | %.3f / %.3f | %.3f / %.3f | %.3f | %.1f / %.1f |"
              % (name, l_med, l_p95, r_med, r_p95, r_med - l_med, n_med, n_p95))
    return 0


if __name__ == "__main__":
    sys.exit(main())
