#!/usr/bin/env python3
"""Interoperability check: the official MCP Python SDK drives tradeterm-connect.

The SDK starts `tradeterm-connect` as a stdio MCP server (as a desktop AI
client would); the connector forwards to a hosted tradeterm `/mcp/v1`, which
runs the tools on a (simulated) terminal. It also asks `get_bars` for a chart
(`"chart": true`) and decodes the PNG image content it gets.

Then the MCP resources of the key's terminal (docs/mcp.md, "Resources and
subscriptions"), twice: through the connector (stdio) and with the SDK's own
streamable HTTP client straight to `--url`. Each time: `resources/list` (the
five URIs of one terminal), `resources/read` of each (JSON content checked),
reads of another terminal's or an unknown URI refused, `resources/subscribe`
to the positions, a live `place_order` (`"dry_run": false`: the terminal must
allow trading; the SDK's elicitation callback accepts the server's
confirmation request, relayed by the connector in the first pass) and a `notifications/resources/updated` for that URI within
30 s, the new position in a fresh read, `resources/unsubscribe`, and the
position closed again.

The script asserts real results and prints one JSON summary line on stdout;
any failure exits non-zero.

Usage:
  TRADETERM_TERMINAL_KEY=tt_term_... python3 scripts/interop/mcp_connect.py \
      --connector target/debug/tradeterm-connect --url http://127.0.0.1:8090/mcp/v1 \
      --expect-tools 25 --terminal-id term_...

Requires the project venv (`cargo xtask venv` installs scripts/requirements-test.txt into .venv: the `mcp` package).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import struct
import sys
import time
import warnings
import zlib


def fail(message: str) -> None:
    print(f"interop failure: {message}", file=sys.stderr)
    sys.exit(1)


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height of an 8-bit RGB PNG, after decoding its pixels (every row present)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail("the chart is not a PNG")
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            if (depth, colour) != (8, 2):
                fail(f"the chart is not 8-bit RGB (depth {depth}, colour type {colour})")
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    if len(zlib.decompress(idat)) != height * (1 + 3 * width):
        fail("the chart's pixel data does not decode to its stated size")
    return width, height


RESOURCE_KINDS = ("account", "positions", "orders", "alerts", "status")
# How long a resource update may take to arrive after the order that causes it.
UPDATE_DEADLINE_S = 30.0


class Updates:
    """Collects every `notifications/resources/updated` a session receives
    (the SDK's message handler), and lets the check wait for one URI."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self.changed = asyncio.Event()

    async def handle(self, message) -> None:
        from mcp import types

        if isinstance(message, types.ResourceUpdatedNotification):
            self.uris.append(str(message.params.uri))
            self.changed.set()

    async def wait_for(self, uri: str, deadline_s: float) -> float:
        """Seconds until `uri` was notified; fails after `deadline_s`."""
        started = time.monotonic()
        while uri not in self.uris:
            left = deadline_s - (time.monotonic() - started)
            if left <= 0:
                fail(f"no notifications/resources/updated for {uri} within {deadline_s:.0f} s (got {self.uris})")
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), timeout=left)
            except asyncio.TimeoutError:
                pass
        return time.monotonic() - started


def resource_json(result, uri: str):
    """The JSON of a `resources/read` answer: one text content of `uri`, `application/json`."""
    contents = result.contents
    if len(contents) != 1:
        fail(f"read {uri}: {len(contents)} contents, expected 1")
    c = contents[0]
    if str(c.uri) != uri or c.mime_type != "application/json" or getattr(c, "text", None) is None:
        fail(f"read {uri}: expected application/json text of that URI, got {c!r:.300}")
    try:
        return json.loads(c.text)
    except ValueError as e:
        fail(f"read {uri}: the text is not JSON ({e}): {c.text[:200]!r}")


async def accept_trades(context, params):
    """The elicitation callback of a user who accepts every live trade the
    server asks about (docs/mcp.md, "Trade confirmation"; the other answers
    are scripts/interop/mcp_confirm.py's)."""
    from mcp import types

    return types.ElicitResult(action="accept", content={"confirm": True})


async def check_resources(client, updates: Updates, terminal: str | None, symbol: str) -> dict:
    """The MCP resources of the session's terminal: list, read each, refused
    strangers, subscribe, a live order, the update, unsubscribe."""
    caps = client.server_capabilities
    if caps is None or caps.resources is None or caps.resources.subscribe is not True:
        fail(f"the server must declare resources with subscribe: {caps!r}")

    listed = (await client.list_resources()).resources
    uris = [str(r.uri) for r in listed]
    if len(uris) != len(RESOURCE_KINDS):
        fail(f"resources/list gave {uris}, expected the {len(RESOURCE_KINDS)} resources of one terminal")
    base = uris[0].rsplit("/", 1)[0]
    if not base.startswith("tradeterm://terminals/") or (terminal and base != f"tradeterm://terminals/{terminal}"):
        fail(f"resources/list: {uris[0]} is not a resource of terminal {terminal}")
    if uris != [f"{base}/{k}" for k in RESOURCE_KINDS]:
        fail(f"resources/list gave {uris}")
    if any(r.mime_type != "application/json" or not r.name or not r.description for r in listed):
        fail(f"every resource has a name, a description and application/json: {listed!r:.500}")
    terminal = base.rsplit("/", 1)[1]

    async def read(kind: str):
        uri = f"{base}/{kind}"
        # Fresh from the server every time (never the SDK's response cache).
        return resource_json(await client.read_resource(uri, cache_mode="bypass"), uri)

    account = await read("account")
    if not isinstance(account, dict) or any(
        not isinstance(account.get(f), (int, float)) for f in ("balance", "equity", "margin", "free_margin")
    ):
        fail(f"account resource without balance/equity/margin: {account!r:.300}")
    if account.get("trade_mode") != "demo" or account["equity"] <= 0:
        fail(f"account resource: {account!r:.300}")
    positions = await read("positions")
    if not isinstance(positions, dict) or not isinstance(positions.get("positions"), list):
        fail(f"positions resource is not a list of positions: {positions!r:.300}")
    before = {p["ticket"] for p in positions["positions"]}
    orders = await read("orders")
    if not isinstance(orders, dict) or not isinstance(orders.get("orders"), list):
        fail(f"orders resource is not a list of orders: {orders!r:.300}")
    alerts = await read("alerts")
    if not isinstance(alerts, dict) or not isinstance(alerts.get("alerts"), list):
        fail(f"alerts resource is not a list of alert rules: {alerts!r:.300}")
    status = await read("status")
    if not isinstance(status, dict) or status.get("id") != terminal or status.get("connected") is not True:
        fail(f"status resource of {terminal}: {status!r:.300}")

    # Another terminal's resources, an unknown kind and a stranger are not
    # this key's: JSON-RPC error -32002 (resource not found).
    from mcp.shared.exceptions import MCPError

    for bad in (
        "tradeterm://terminals/term_not_this_key/account",
        f"{base}/moon",
        "file:///etc/passwd",
    ):
        try:
            await client.read_resource(bad, cache_mode="bypass")
        except MCPError as e:
            if e.code != -32002 or "no resource" not in e.message:
                fail(f"read {bad}: expected -32002 'no resource', got {e.code} {e.message!r}")
        else:
            fail(f"{bad} must not be readable")

    with warnings.catch_warnings():
        # resources/subscribe is the 2025-11-25 revision's, which this server speaks.
        warnings.simplefilter("ignore")
        positions_uri = f"{base}/positions"
        await client.subscribe_resource(positions_uri)
        order = await client.call_tool(
            "place_order", {"symbol": symbol, "order_type": "BUY", "volume": 0.01, "dry_run": False}
        )
        trade = order.structured_content or {}
        if order.is_error or trade.get("dry_run") is not False or not (trade.get("trade") or {}).get("position"):
            fail(f"live place_order failed: {order.content!r:.300}")
        ticket = trade["trade"]["position"]
        waited = await updates.wait_for(positions_uri, UPDATE_DEADLINE_S)
        if set(updates.uris) != {positions_uri}:
            fail(f"only the subscribed resource may be notified, got {updates.uris}")
        after = {p["ticket"] for p in (await read("positions"))["positions"]}
        if ticket not in after or ticket in before:
            fail(f"the new position {ticket} is not in the positions resource after the update: {sorted(after)}")
        await client.unsubscribe_resource(positions_uri)

    closed = await client.call_tool("close_position", {"ticket": ticket, "dry_run": False})
    if closed.is_error or (closed.structured_content or {}).get("dry_run") is not False:
        fail(f"closing position {ticket} failed: {closed.content!r:.300}")
    return {
        "terminal": terminal,
        "resources": len(uris),
        "balance": account["balance"],
        "position": ticket,
        "notified": positions_uri,
        "notified_after_s": round(waited, 3),
    }


async def check(
    connector: str, url: str, key: str, expect_tools: int | None, symbol: str, terminal: str | None
) -> dict:
    from mcp import Client, StdioServerParameters
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

    params = StdioServerParameters(
        command=connector,
        args=["--url", url],
        env={"TRADETERM_TERMINAL_KEY": key, "RUST_LOG": "warn"},
    )
    async with Client(params, read_timeout_seconds=30) as client:
        server = client.server_info
        if server is None or server.name != "tradeterm":
            fail(f"server name is {server.name if server else None!r}, expected 'tradeterm'")

        tools = (await client.list_tools()).tools
        names = [t.name for t in tools]
        if len(set(names)) != len(names):
            fail("duplicate tool names")
        for required in ("get_tick", "place_order", "set_mode", "get_mode"):
            if required not in names:
                fail(f"{required} is not listed")
        if expect_tools is not None and len(tools) != expect_tools:
            fail(f"{len(tools)} tools listed, expected {expect_tools}")
        if any(len(n) > 64 for n in names):
            fail("a tool name is longer than 64 characters")
        place = next(t for t in tools if t.name == "place_order")
        if place.annotations is None or place.annotations.destructive_hint is not True:
            fail("place_order must be annotated destructive")

        # The default list has no output schemas (see the --output-schemas session below).
        tick = await client.call_tool("get_tick", {"symbol": symbol})
        if tick.is_error:
            fail(f"get_tick failed: {tick.content}")
        data = tick.structured_content
        if not (isinstance(data, dict) and data.get("symbol") == symbol and 0 < data["bid"] < data["ask"]):
            fail(f"get_tick returned {data!r}")

        # A chart: the structured bars, and the candles as an image content.
        charted = await client.call_tool(
            "get_bars", {"symbol": symbol, "timeframe": "H1", "count": 60, "chart": True}
        )
        if charted.is_error or len((charted.structured_content or {}).get("bars", [])) != 60:
            fail(f"get_bars with chart failed: {charted.content!r:.300}")
        images = [c for c in charted.content if getattr(c, "type", None) == "image"]
        mime = getattr(images[0], "mime_type", None) or getattr(images[0], "mimeType", None) if images else None
        if len(images) != 1 or mime != "image/png":
            fail(f"get_bars with chart: expected one image/png content, got {[getattr(c, 'type', c) for c in charted.content]}")
        chart_size = png_size(base64.b64decode(images[0].data))
        if chart_size != (1200, 800):
            fail(f"the chart is {chart_size[0]}x{chart_size[1]}, expected 1200x800")

        bad = await client.call_tool("get_tick", {"symbol": 42})
        if not bad.is_error or (bad.structured_content or {}).get("code") != "VALIDATION_ERROR":
            fail(f"bad input must be a VALIDATION_ERROR tool error, got {bad!r}")

        mode = await client.call_tool("set_mode", {"mode": "paper"})
        if mode.is_error or (mode.structured_content or {}).get("mode") != "paper":
            fail(f"set_mode paper failed: {mode!r}")
        order = await client.call_tool(
            "place_order", {"symbol": symbol, "order_type": "BUY", "volume": 0.01, "dry_run": False}
        )
        if order.is_error or (order.structured_content or {}).get("dry_run") is not True:
            fail(f"place_order in paper mode must come back as a dry run, got {order!r}")
        current = await client.call_tool("get_mode", {})
        if (current.structured_content or {}).get("mode") != "paper":
            fail(f"get_mode returned {current!r}")
        protocol = client.protocol_version

    # The connector's --tools and --output-schemas flags: only the market group
    # (plus the session tools), each with its output schema, against which the
    # SDK validates structured content.
    grouped = StdioServerParameters(
        command=connector,
        args=["--url", url, "--tools", "market", "--output-schemas"],
        env={"TRADETERM_TERMINAL_KEY": key, "RUST_LOG": "warn"},
    )
    async with Client(grouped, read_timeout_seconds=30) as client:
        market = (await client.list_tools()).tools
        market_names = {t.name for t in market}
        if not {"get_tick", "set_mode", "get_mode"} <= market_names or "place_order" in market_names:
            fail(f"--tools market listed {sorted(market_names)}")
        if any(t.output_schema is None for t in market):
            fail("--output-schemas: a tool came without its output schema")
        validated = await client.call_tool("get_tick", {"symbol": symbol})
        if validated.is_error:
            fail(f"get_tick with output schemas failed: {validated.content}")
        refused = False
        try:
            result = await client.call_tool("place_order", {"symbol": symbol, "order_type": "BUY", "volume": 0.01})
            refused = result.is_error
        except Exception as e:  # the server answers a JSON-RPC error
            refused = "not enabled in this session" in str(e)
        if not refused:
            fail("place_order outside the session's groups must be refused")

    # Resources through the connector (stdio, as a desktop client sees them)...
    resources = {}
    updates = Updates()
    via_connector = StdioServerParameters(
        command=connector,
        args=["--url", url],
        env={"TRADETERM_TERMINAL_KEY": key, "RUST_LOG": "warn"},
    )
    async with Client(
        via_connector, read_timeout_seconds=30, message_handler=updates.handle, elicitation_callback=accept_trades
    ) as client:
        resources["connector"] = await check_resources(client, updates, terminal, symbol)
    # ... and with the SDK's streamable HTTP client straight to the server.
    updates = Updates()
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(
            transport, read_timeout_seconds=30, message_handler=updates.handle, elicitation_callback=accept_trades
        ) as client:
            resources["http"] = await check_resources(client, updates, terminal, symbol)

    return {
        "resources": resources,
        "server": server.name,
        "version": server.version,
        "protocol": protocol,
        "tools": len(tools),
        "market_group_tools": len(market),
        "bid": data["bid"],
        "ask": data["ask"],
        "paper_order_dry_run": order.structured_content["dry_run"],
        "chart_size": list(chart_size),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connector", required=True, help="path of the tradeterm-connect binary")
    parser.add_argument("--url", required=True, help="hosted /mcp/v1 URL")
    parser.add_argument("--expect-tools", type=int, default=None, help="exact number of tools expected")
    parser.add_argument("--symbol", default="EURUSD")
    parser.add_argument("--terminal-id", default=None, help="the terminal the key is bound to (its resources)")
    args = parser.parse_args()
    key = os.environ.get("TRADETERM_TERMINAL_KEY")
    if not key:
        fail("TRADETERM_TERMINAL_KEY is not set")
    summary = asyncio.run(check(args.connector, args.url, key, args.expect_tools, args.symbol, args.terminal_id))
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
