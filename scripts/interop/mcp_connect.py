#!/usr/bin/env python3
"""Interoperability check: the official MCP Python SDK drives tradeterm-connect.

The SDK starts `tradeterm-connect` as a stdio MCP server (as a desktop AI
client would); the connector forwards to a hosted tradeterm `/mcp/v1`, which
runs the tools on a (simulated) terminal. It also asks `get_bars` for a chart
(`"chart": true`) and decodes the PNG image content it gets. The script asserts real results and
prints one JSON summary line on stdout; any failure exits non-zero.

Usage:
  TRADETERM_TERMINAL_KEY=tt_term_... python3 scripts/interop/mcp_connect.py \
      --connector target/debug/tradeterm-connect --url http://127.0.0.1:8090/mcp/v1 \
      --expect-tools 25

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


async def check(connector: str, url: str, key: str, expect_tools: int | None, symbol: str) -> dict:
    from mcp import Client, StdioServerParameters

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

    return {
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
    args = parser.parse_args()
    key = os.environ.get("TRADETERM_TERMINAL_KEY")
    if not key:
        fail("TRADETERM_TERMINAL_KEY is not set")
    summary = asyncio.run(check(args.connector, args.url, key, args.expect_tools, args.symbol))
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
