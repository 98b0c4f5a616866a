"""Drives tradeterm through a Python client generated from its served OpenAPI document.

Usage: generated_client.py <package-parent-dir> <package-name> <base-url> <api-key>

`bins/tradeterm/tests/external/python_client.rs` generates the client with the
pinned `openapi-python-client` (scripts/requirements-test.txt) from
`GET /api/v1/openapi.json` of a test stack with one simulated terminal, then
runs this script. Every call goes through the generated functions and models
(nothing is hand-written HTTP): a quote, a dry-run order, the positions, a
journal entry written and read back, and two catalog tools under
`/api/v1/tools/`. Each answer is checked for its values, not only its status;
the script prints one line per call and exits non-zero on the first failure.
"""

import importlib
import math
import sys


def main() -> None:
    parent, package, base_url, api_key = sys.argv[1:5]
    sys.path.insert(0, parent)
    client_mod = importlib.import_module(package)
    api = lambda path: importlib.import_module(f"{package}.api.{path}")  # noqa: E731
    models = importlib.import_module(f"{package}.models")

    client = client_mod.AuthenticatedClient(base_url=base_url, token=api_key, raise_on_unexpected_status=True)

    def ok(response, what):
        assert response.status_code == 200, f"{what}: HTTP {response.status_code}: {response.content!r}"
        parsed = response.parsed
        assert hasattr(parsed, "data"), f"{what}: not a success envelope: {parsed!r}"
        return parsed.data

    # A quote.
    tick = ok(api("market.get_tick").sync_detailed("EURUSD", client=client), "get_tick")
    assert tick.symbol == "EURUSD", tick
    assert 0 < tick.bid < tick.ask, (tick.bid, tick.ask)
    assert tick.ask - tick.bid < 0.01, "a EURUSD spread under 100 pips"
    print(f"get_tick: EURUSD {tick.bid} / {tick.ask} at {tick.time.isoformat()}")

    # A dry-run order (the default): validated and priced, nothing placed.
    order = models.PlaceOrderInput.from_dict(
        {
            "symbol": "EURUSD",
            "order_type": "BUY",
            "volume": 0.1,
            "stop_loss": round(tick.bid - 0.0050, 5),
            "take_profit": round(tick.ask + 0.0100, 5),
        }
    )
    outcome = ok(api("trading.place_order").sync_detailed(client=client, body=order), "place_order")
    assert outcome.dry_run is True and outcome.executed is False, outcome
    assert outcome.symbol == "EURUSD" and outcome.order_type == "BUY" and outcome.volume == 0.1, outcome
    assert abs(outcome.price - tick.ask) < 0.001, (outcome.price, tick.ask)
    assert outcome.margin_required > 0 and outcome.free_margin_after < outcome.free_margin, outcome
    assert outcome.reward_to_risk is not None and 1.5 < outcome.reward_to_risk < 2.5, outcome.reward_to_risk
    print(f"place_order (dry run): would buy 0.1 at {outcome.price}, margin {outcome.margin_required:.2f}")

    # Positions: the dry run opened none.
    positions = ok(api("account.get_positions").sync_detailed(client=client), "get_positions")
    assert positions.positions == [], positions
    print("get_positions: none open")

    # A journal entry written, then read back by id.
    body = models.AddJournalInput.from_dict(
        {
            "entry": {
                "symbol": "EURUSD",
                "side": "buy",
                "volume": 0.1,
                "entry_price": outcome.price,
                "setup": "generated-client test",
                "tags": ["python", "openapi"],
            }
        }
    )
    added = ok(api("journal.add_journal_entry").sync_detailed(client=client, body=body), "add_journal_entry")
    assert added.id.startswith("jrn_"), added.id
    read = ok(api("journal.get_journal_entry").sync_detailed(added.id, client=client), "get_journal_entry")
    assert read.id == added.id, (read.id, added.id)
    entry = read.entry if isinstance(read.entry, dict) else read.entry.to_dict()
    assert entry["symbol"] == "EURUSD" and entry["setup"] == "generated-client test", entry
    assert entry["tags"] == ["python", "openapi"] and math.isclose(entry["entry_price"], outcome.price), entry
    print(f"journal: wrote and read {added.id}")

    # Two catalog tools through POST /api/v1/tools/<name>.
    bars_in = models.BarsInput.from_dict({"symbol": "EURUSD", "timeframe": "H1", "count": 48})
    bars = ok(api("tools.tool_get_bars").sync_detailed(client=client, body=bars_in), "tool_get_bars")
    assert bars.symbol == "EURUSD" and bars.timeframe == "H1" and len(bars.bars) == 48, (bars.symbol, len(bars.bars))
    # The generator names `open` `open_` (a Python builtin).
    assert all(b.low <= min(b.open_, b.close) and b.high >= max(b.open_, b.close) for b in bars.bars)
    times = [b.time for b in bars.bars]
    assert times == sorted(times) and len(set(times)) == 48, "oldest first, one bar per hour"
    print(f"tool_get_bars: 48 H1 bars, last close {bars.bars[-1].close}")

    size_in = models.PositionSizeInput.from_dict(
        {
            "symbol": "EURUSD",
            "side": "buy",
            "risk": {"type": "money", "amount": 100},
            "stop": {"type": "points", "points": 200},
        }
    )
    size = ok(
        api("tools.tool_calculate_position_size").sync_detailed(client=client, body=size_in),
        "tool_calculate_position_size",
    )
    assert size.symbol == "EURUSD" and size.side == "buy", size
    assert size.stop_points == 200 and size.risk_budget == 100, (size.stop_points, size.risk_budget)
    assert 0 < size.money_at_risk <= 100 + 1e-9 and size.volume > 0, (size.money_at_risk, size.volume)
    assert math.isclose(size.raw_volume * size.loss_per_lot, 100, rel_tol=1e-6), (size.raw_volume, size.loss_per_lot)
    print(f"tool_calculate_position_size: {size.volume} lots risk {size.money_at_risk:.2f}")

    print("generated client: all calls passed")


if __name__ == "__main__":
    main()
