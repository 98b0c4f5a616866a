#!/usr/bin/env python3
"""Interoperability check: live MCP trades confirmed by a human, with the
official MCP Python SDK's elicitation callback (docs/mcp.md, "Trade
confirmation").

Against a hosted tradeterm `/mcp/v1` whose license has MCP trade
confirmation on (the default) and whose terminal allows trading, with the
server's confirmation limit `--limit-secs`:

1. a client without an elicitation callback (so without the capability):
   a live `place_order` is refused with `TRADE_NOT_CONFIRMED`, a dry run
   still works;
2. a client whose callback answers decline, cancel, then sleeps past the
   limit (timeout), then accepts: four live `place_order` calls, only the
   last executes; every request is a form with one required boolean
   `confirm` and a message naming the symbol, the volume and the money at
   risk;
3. through the stdio connector (`--connector`): the callback declines, then
   accepts, the live `close_position` of that order's position (the
   elicitation request and its answer relayed both ways).

`get_deal_history` then proves it: exactly two new deals, the accepted
order's and its close. The script prints one JSON summary line; any failure
exits non-zero.

Usage:
  TRADETERM_TERMINAL_KEY=tt_term_... python3 scripts/interop/mcp_confirm.py \\
      --url http://127.0.0.1:8090/mcp/v1 --connector target/debug/tradeterm-connect --limit-secs 2

Requires the project venv (`cargo xtask venv`: the `mcp` package of scripts/requirements-test.txt).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import sys


def fail(message: str) -> None:
    print(f"interop failure: {message}", file=sys.stderr)
    sys.exit(1)


SYMBOL = "EURUSD"
LIVE_ORDER = {"symbol": SYMBOL, "order_type": "BUY", "volume": 0.01, "stop_loss": 1.0, "dry_run": False}


class Answers:
    """An elicitation callback answering from a script of answers, keeping what it was asked."""

    def __init__(self, script: list[str], limit_secs: float) -> None:
        self.script = list(script)
        self.limit_secs = limit_secs
        self.asked: list[dict] = []

    async def __call__(self, context, params):
        from mcp import types

        schema = params.requested_schema
        schema = schema if isinstance(schema, dict) else schema.model_dump(by_alias=True, exclude_none=True)
        self.asked.append({"message": params.message, "schema": schema, "mode": getattr(params, "mode", None)})
        props = schema.get("properties", {})
        if (
            schema.get("type") != "object"
            or schema.get("required") != ["confirm"]
            or props.get("confirm", {}).get("type") != "boolean"
            or any(p.get("type") in ("object", "array") or "properties" in p for p in props.values())
        ):
            fail(f"the requested schema is not a flat form with one required boolean `confirm`: {schema!r}")
        answer = self.script.pop(0) if self.script else "decline"
        if answer == "timeout":
            # The user never answers in time: the server gives up first.
            await asyncio.sleep(self.limit_secs * 3 + 1)
            answer = "accept"
        if answer == "accept":
            return types.ElicitResult(action="accept", content={"confirm": True})
        return types.ElicitResult(action=answer)


def code_of(result) -> str | None:
    return (result.structured_content or {}).get("code") if result.is_error else None


async def deals(client, around_ms: int) -> list[dict]:
    """Every deal within a day of the terminal's clock (the simulator keeps its own time)."""
    day = 86_400_000

    def iso(ms: int) -> str:
        return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).isoformat().replace("+00:00", "Z")

    r = await client.call_tool("get_deal_history", {"from": iso(around_ms - day), "to": iso(around_ms + day)})
    if r.is_error:
        fail(f"get_deal_history failed: {r.content!r:.300}")
    return r.structured_content["deals"]


async def terminal_now(client) -> int:
    tick = await client.call_tool("get_tick", {"symbol": SYMBOL})
    if tick.is_error:
        fail(f"get_tick failed: {tick.content!r:.300}")
    t = tick.structured_content["time"]
    if isinstance(t, (int, float)):
        return int(t)
    return int(datetime.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp() * 1000)


async def check(url: str, connector: str, key: str, limit_secs: float) -> dict:
    from mcp import Client, StdioServerParameters
    from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

    summary: dict = {}
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http:
        # 1. No elicitation capability: live trades refused, dry runs work.
        async with Client(streamable_http_client(url, http_client=http), read_timeout_seconds=30) as client:
            now = await terminal_now(client)
            before = await deals(client, now)
            refused = await client.call_tool("place_order", LIVE_ORDER)
            if code_of(refused) != "TRADE_NOT_CONFIRMED":
                fail(f"a client without elicitation must get TRADE_NOT_CONFIRMED, got {refused!r:.400}")
            message = refused.structured_content.get("message", "")
            if "elicitation" not in message or "nothing was sent" not in message:
                fail(f"the refusal must say why and that nothing was sent: {message!r}")
            dry = await client.call_tool("place_order", {**LIVE_ORDER, "dry_run": True})
            if dry.is_error or dry.structured_content.get("dry_run") is not True:
                fail(f"a dry run must still work without elicitation: {dry!r:.400}")
            summary["no_capability"] = code_of(refused)

    # 2. With the callback: decline, cancel, timeout, accept.
    answers = Answers(["decline", "cancel", "timeout", "accept"], limit_secs)
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http:
        async with Client(
            streamable_http_client(url, http_client=http), read_timeout_seconds=30, elicitation_callback=answers
        ) as client:
            outcomes = []
            for expected in ("declined", "cancelled", "did not answer in time"):
                r = await client.call_tool("place_order", LIVE_ORDER)
                if code_of(r) != "TRADE_NOT_CONFIRMED" or expected not in r.structured_content.get("message", ""):
                    fail(f"{expected}: expected TRADE_NOT_CONFIRMED saying so, got {r!r:.400}")
                outcomes.append(code_of(r))
            accepted = await client.call_tool("place_order", LIVE_ORDER)
            out = accepted.structured_content or {}
            if accepted.is_error or out.get("dry_run") is not False or out.get("executed") is not True:
                fail(f"the accepted live order must execute: {accepted!r:.400}")
            trade = out["trade"]
            if len(answers.asked) != 4:
                fail(f"the callback was asked {len(answers.asked)} times, expected 4")
            shown = answers.asked[-1]["message"]
            for part in ("LIVE trade (place_order)", f"0.01 lots {SYMBOL}", "SL 1 ", "Money at risk at the stop loss"):
                if part not in shown:
                    fail(f"`{part}` missing from the confirmation message: {shown!r}")
            summary["http"] = outcomes + ["accepted"]
            summary["message"] = shown

    # 3. Through the connector: decline, then accept, the close of that position.
    closing = Answers(["decline", "accept"], limit_secs)
    params = StdioServerParameters(
        command=connector, args=["--url", url], env={"TRADETERM_TERMINAL_KEY": key, "RUST_LOG": "warn"}
    )
    async with Client(params, read_timeout_seconds=30, elicitation_callback=closing) as client:
        close = {"ticket": trade["position"], "dry_run": False}
        declined = await client.call_tool("close_position", close)
        if code_of(declined) != "TRADE_NOT_CONFIRMED":
            fail(f"a declined close through the connector must be TRADE_NOT_CONFIRMED, got {declined!r:.400}")
        closed = await client.call_tool("close_position", close)
        if closed.is_error or (closed.structured_content or {}).get("executed") is not True:
            fail(f"the accepted close through the connector must execute: {closed!r:.400}")
        if len(closing.asked) != 2 or f"#{trade['position']}" not in closing.asked[0]["message"]:
            fail(f"the connector relayed {len(closing.asked)} confirmations: {closing.asked!r:.400}")
        after = await deals(client, now)
        summary["connector"] = ["TRADE_NOT_CONFIRMED", "accepted"]

    # The deal history: the accepted order and its close, nothing else.
    known = {d["ticket"] for d in before}
    new = [d for d in after if d["ticket"] not in known]
    if len(new) != 2:
        fail(f"expected exactly 2 new deals (the accepted order and its close), got {new!r:.600}")
    if not any(d["order"] == trade["order"] for d in new) or any(d["position"] != trade["position"] for d in new):
        fail(f"the new deals are not the accepted order's: {new!r:.600} (trade {trade!r})")
    summary["new_deals"] = len(new)
    summary["position"] = trade["position"]
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True, help="hosted /mcp/v1 URL")
    parser.add_argument("--connector", required=True, help="path of the tradeterm-connect binary")
    parser.add_argument("--limit-secs", type=float, required=True, help="the server's MCP_TRADE_CONFIRM_TIMEOUT_SECS")
    args = parser.parse_args()
    key = os.environ.get("TRADETERM_TERMINAL_KEY")
    if not key:
        fail("TRADETERM_TERMINAL_KEY is not set")
    print(json.dumps(asyncio.run(check(args.url, args.connector, key, args.limit_secs))))


if __name__ == "__main__":
    main()
