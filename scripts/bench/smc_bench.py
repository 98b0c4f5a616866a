#!/usr/bin/env python3
"""Times smartmoneyconcepts 0.0.27 on the 100 000 bars of `benches/structure.rs`.

Runs `smc.swing_highs_lows(swing_length=50)` + `smc.fvg` + `smc.bos_choch`
(smc's defaults) on the same synthetic series the criterion bench
`structure` uses: the real EUR/USD 15-minute series of `data/market/` laid end
to end, every other copy played backwards (bars reversed, open and close
swapped), truncated to 100 000 bars. No arithmetic touches the prices, so the
bars are bit-identical to the Rust side (compare the printed sum of closes
with the one the bench prints).

Usage (from the repository root):

    python3 scripts/bench/smc_bench.py [--repeat N] [--json]
    python3 scripts/bench/smc_bench.py --repaint [--checkpoints N]

Prints the time of each call and the total (best of N runs, default 1), and
the per-bar cost, to compare with `cargo bench -p tradeterm-core --bench structure`.
With `--json`, prints one JSON object instead (what `cargo xtask bench
analytics` reads; it runs this script in the same run as the Rust bench).

With `--repaint`, measures smc's look-ahead instead: smc is run on N prefixes
`bars[0..=k]` of the real EUR/USD 15-minute series (default parameters), and
each prefix result is compared with the full-series result restricted to rows
`<= k`. A row smc showed at k that later disappears or changes is a repaint:
what smc showed at bar k was rewritten by later bars. Figures are quoted in
`docs/structure.md`.
"""

import argparse
import json
import os
import time
import warnings

import numpy as np
import pandas as pd

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SOURCE = os.path.join(ROOT, "data", "market", "eurusd_15m_smc_upstream.csv")
BARS = 100_000
STEP = pd.Timedelta(minutes=15)


def bench_bars():
    base = pd.read_csv(SOURCE)
    cols = {c: base[c].to_numpy() for c in ("open", "high", "low", "close", "volume")}
    parts = {c: [] for c in cols}
    total, copy = 0, 0
    while total < BARS:
        forward = copy % 2 == 0
        take = min(len(base), BARS - total)
        sl = slice(None) if forward else slice(None, None, -1)
        o, c = (cols["open"], cols["close"]) if forward else (cols["close"], cols["open"])
        parts["open"].append(o[sl][:take])
        parts["close"].append(c[sl][:take])
        for k in ("high", "low", "volume"):
            parts[k].append(cols[k][sl][:take])
        total += take
        copy += 1
    start = pd.Timestamp(base["time"].iloc[0])
    df = pd.DataFrame({k: np.concatenate(v) for k, v in parts.items()})
    df.index = pd.date_range(start, periods=len(df), freq=STEP)
    # Positional RangeIndex, as in the fixtures script (smc is positional).
    return df.reset_index(drop=True)


def smc_rows(smc, df):
    """Every smc output of the default parameters, as {family: {index: row}}."""
    shl = smc.swing_highs_lows(df, swing_length=50)
    frames = {
        "swings": shl,
        "fvg": smc.fvg(df),
        "ob": smc.ob(df, shl),
        "liquidity": smc.liquidity(df, shl),
        "bos_choch": smc.bos_choch(df, shl),
    }
    out = {}
    for name, frame in frames.items():
        values = frame.to_numpy(dtype=np.float64)
        keep = ~np.all(np.isnan(values), axis=1)
        out[name] = {int(i): tuple(np.nan_to_num(values[i], nan=-1.0)) for i in np.flatnonzero(keep)}
    return out


def repaint(smc, checkpoints):
    df = pd.read_csv(SOURCE)
    n = len(df)
    full = smc_rows(smc, df)
    ks = sorted({int(k) for k in np.linspace(400, n - 2, checkpoints)})
    shown = {name: 0 for name in full}
    changed = {name: 0 for name in full}
    for k in ks:
        part = smc_rows(smc, df.iloc[: k + 1].reset_index(drop=True))
        for name, rows in part.items():
            truth = {i: r for i, r in full[name].items() if i <= k}
            shown[name] += len(rows)
            # Only rows smc showed at k: a row that appears later is a lag, not a revision.
            changed[name] += sum(1 for i, r in rows.items() if truth.get(i) != r)
    print(f"smc {smc.__version__} on {os.path.basename(SOURCE)}: {len(ks)} prefixes, default parameters")
    for name in full:
        share = 100.0 * changed[name] / max(shown[name], 1)
        print(f"  {name:10} rows shown {shown[name]:7}, later changed or removed {changed[name]:6} ({share:.1f}%)")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--repaint", action="store_true")
    parser.add_argument("--checkpoints", type=int, default=25)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    from smartmoneyconcepts import smc

    if args.repaint:
        repaint(smc, args.checkpoints)
        return

    df = bench_bars()
    assert len(df) == BARS
    # Left-to-right, as the Rust bench sums them.
    checksum = 0.0
    for x in df["close"].tolist():
        checksum += x
    if not args.json:
        print(f"smc {smc.__version__}: {len(df)} bars, sum of closes {checksum:.5f}")
    best = None
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        shl = smc.swing_highs_lows(df, swing_length=50)
        t1 = time.perf_counter()
        fvg = smc.fvg(df)
        t2 = time.perf_counter()
        bos = smc.bos_choch(df, shl)
        t3 = time.perf_counter()
        run = (t1 - t0, t2 - t1, t3 - t2, t3 - t0)
        best = run if best is None or run[3] < best[3] else best
    swings = int(shl["HighLow"].notna().sum())
    gaps = int(fvg["FVG"].notna().sum())
    breaks = int((bos["BOS"].notna() | bos["CHOCH"].notna()).sum())
    if args.json:
        print(
            json.dumps(
                {
                    "smc": smc.__version__,
                    "bars": len(df),
                    "sum_close": checksum,
                    "repeat": args.repeat,
                    "swing_highs_lows_s": best[0],
                    "fvg_s": best[1],
                    "bos_choch_s": best[2],
                    "total_s": best[3],
                    "rows": {"swings": swings, "fvg": gaps, "bos_choch": breaks},
                }
            )
        )
        return
    print(f"rows: {swings} swings, {gaps} fvg, {breaks} bos/choch")
    print(
        f"swing_highs_lows {best[0]:.3f} s, fvg {best[1]:.3f} s, bos_choch {best[2]:.3f} s, "
        f"total {best[3]:.3f} s ({best[3] / BARS * 1e9:.0f} ns/bar)"
    )


if __name__ == "__main__":
    main()
