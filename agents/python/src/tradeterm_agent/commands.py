"""One protocol command → MetaTrader5 calls → one result.

Each handler is a plain function ``handler(term, ctx, command) -> result``
run as one job in the terminal's worker thread (see ``terminal.py``), so the
calls of one command see a consistent terminal and never block the websocket
loop. Errors are raised as ``AgentError`` with the protocol's codes.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import mapping as M
from .constants import IPC_ERRORS, RES_E_NOT_FOUND, RES_S_OK, const, retcode_name
from .terminal import AgentError, Terminal

#: Most bars one command may ask for (the protocol's limit).
MAX_BARS = 100_000
#: Most ticks one answer carries (about 8 MB of JSON).
MAX_TICKS = 100_000
#: Return codes after which a market order is sent once more at a fresh price.
REQUOTES = (10004, 10020, 10021)


class Context:
    """What a handler needs besides the terminal."""

    def __init__(
        self,
        api: Any,
        tm: M.TimeMap,
        allow_trading: bool,
        deviation: int = 20,
        note_symbol: Optional[Callable[[str], None]] = None,
    ) -> None:
        self.api = api
        self.tm = tm
        self.allow_trading = allow_trading
        self.deviation = deviation
        self.note_symbol = note_symbol or (lambda _s: None)


# -- argument checks --------------------------------------------------------


def invalid(msg: str) -> AgentError:
    return AgentError("INVALID_ARGUMENT", msg)


def arg_str(c: Dict[str, Any], name: str) -> str:
    v = c.get(name)
    if not isinstance(v, str) or not v:
        raise invalid("`%s` must be a non-empty string" % name)
    return v


def arg_int(c: Dict[str, Any], name: str, required: bool = True) -> Optional[int]:
    v = c.get(name)
    if v is None and not required:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise invalid("`%s` must be a non-negative integer" % name)
    return v


def arg_num(c: Dict[str, Any], name: str, required: bool = True) -> Optional[float]:
    v = c.get(name)
    if v is None and not required:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
        raise invalid("`%s` must be a finite number" % name)
    return float(v)


def arg_range(c: Dict[str, Any]) -> Tuple[int, int]:
    f = arg_int(c, "from")
    t = arg_int(c, "to")
    assert f is not None and t is not None
    if f > t:
        raise invalid("`from` (%d) is after `to` (%d)" % (f, t))
    return f, t


# -- terminal helpers (inside a job) -----------------------------------------


def _ipc_down(term: Terminal) -> Optional[AgentError]:
    code, _ = term.last_error()
    if code in IPC_ERRORS:
        return term.failure("terminal call")
    return None


def symbol_info(term: Terminal, ctx: Context, name: str) -> Any:
    """``symbol_info``; selects the symbol in Market Watch when needed
    (``symbol_select(name, True)``). Unknown symbol → ``NOT_FOUND``."""
    api = term.api
    s = api.symbol_info(name)
    if s is None:
        down = _ipc_down(term)
        if down:
            raise down
        api.symbol_select(name, True)
        s = api.symbol_info(name)
        if s is None:
            down = _ipc_down(term)
            if down:
                raise down
            raise AgentError("NOT_FOUND", "unknown symbol `%s`; the `symbols` command lists them" % name)
    if not M.field(s, "visible", True):
        api.symbol_select(name, True)
    ctx.note_symbol(name)
    return s


def current_tick(term: Terminal, ctx: Context, name: str) -> Any:
    """``symbol_info_tick`` of a known symbol; ``NOT_FOUND`` without a quote."""
    t = term.api.symbol_info_tick(name)
    if t is None:
        down = _ipc_down(term)
        if down:
            raise down
        raise AgentError("NOT_FOUND", "%s has no quote yet" % name)
    if M.num(t.bid) <= 0.0 and M.num(t.ask) <= 0.0:
        raise AgentError("NOT_FOUND", "%s has no quote yet" % name)
    return t


def rows(term: Terminal, call: str, result: Any) -> Any:
    """A list result; ``None`` with ``last_error()`` "Success" (some builds
    answer so when nothing matches) is an empty list, any other ``None`` an error."""
    if result is None:
        code, _ = term.last_error()
        if code == RES_S_OK:
            return ()
        raise term.failure(call)
    return result


def account(term: Terminal) -> Any:
    a = term.api.account_info()
    if a is None:
        raise term.failure("account_info()")
    return a


# -- read commands ----------------------------------------------------------


def cmd_account_info(term: Terminal, ctx: Context, c: Dict[str, Any]) -> Dict[str, Any]:
    info = M.account_info(ctx.api, account(term))
    if info["trade_mode"] is None:
        raise AgentError("INTERNAL", "the terminal reports an unknown account trade_mode")
    return dict(kind="account_info", **info)


def cmd_positions(term: Terminal, ctx: Context, c: Dict[str, Any]) -> Dict[str, Any]:
    symbol = c.get("symbol")
    found = rows(term, "positions_get()", term.api.positions_get(symbol=symbol) if symbol else term.api.positions_get())
    return {"kind": "positions", "positions": [M.position(ctx.api, ctx.tm, p) for p in found]}


def cmd_orders(term: Terminal, ctx: Context, c: Dict[str, Any]) -> Dict[str, Any]:
    symbol = c.get("symbol")
    found = rows(term, "orders_get()", term.api.orders_get(symbol=symbol) if symbol else term.api.orders_get())
    out = [M.pending_order(ctx.api, ctx.tm, o) for o in found]
    return {"kind": "orders", "orders": [o for o in out if o is not None]}


def cmd_history_deals(term: Terminal, ctx: Context, c: Dict[str, Any]) -> Dict[str, Any]:
    f, t = arg_range(c)
    found = rows(term, "history_deals_get()", term.api.history_deals_get(ctx.tm.s_floor(f), ctx.tm.s_ceil(t) + 1))
    deals = [M.deal(ctx.api, ctx.tm, d) for d in found]
    deals = [d for d in deals if f <= d["time"] < t]
    deals.sort(key=lambda d: (d["time"], d["ticket"]))
    return {"kind": "deals", "deals": deals}


def cmd_history_orders(term: Terminal, ctx: Context, c: Dict[str, Any]) -> Dict[str, Any]:
    f, t = arg_range(c)
    found = rows(term, "history_orders_get()", term.api.history_orders_get(ctx.tm.s_floor(f), ctx.tm.s_ceil(t) + 1))
    out = [M.history_order(ctx.api, ctx.tm, o) for o in found]
    orders = [o for o in out if o is not None and f <= o["time_done"] < t]
    orders.sort(key=lambda o: (o["time_done"], o["ticket"]))
    return {"kind": "history_orders", "orders": orders}


def cmd_symbols(term: Terminal, ctx: Context, c: Dict[str, Any]) -> Dict[str, Any]:
    found = rows(term, "symbols_get()", term.api.symbols_get())
    return {"kind": "symbols", "symbols": [str(s.name) for s in found]}


def cmd_symbol_spec(term: Terminal, ctx: Context, c: Dict[str, Any]) -> Dict[str, Any]:
    s = symbol_info(term, ctx, arg_str(c, "symbol"))
    currency = str(account(term).currency)
    return dict(kind="symbol_spec", **M.symbol_spec(ctx.api, s, currency))


def cmd_tick(term: Terminal, ctx: Context, c: Dict[str, Any]) -> Dict[str, Any]:
    name = arg_str(c, "symbol")
    symbol_info(term, ctx, name)
    return dict(kind="tick", **M.tick(ctx.tm, name, current_tick(term, ctx, name)))


def _rates(term: Terminal, call: str, arr: Any) -> List[Any]:
    if arr is None:
        code, _ = term.last_error()
        if code in (RES_E_NOT_FOUND, RES_S_OK):
            return []
        raise term.failure(call)
    return M.records(arr)


def cmd_bars(term: Terminal, ctx: Context, c: Dict[str, Any]) -> Dict[str, Any]:
    name = arg_str(c, "symbol")
    tf_name = c.get("timeframe")
    try:
        tf = M.timeframe_code(ctx.api, str(tf_name))
    except ValueError as e:
        raise invalid(str(e)) from None
    count = arg_int(c, "count", required=False)
    f = arg_int(c, "from", required=False)
    t = arg_int(c, "to", required=False)
    if count is not None and f is not None:
        raise invalid("give either `count` or `from`, not both")
    if count is None and f is None:
        raise invalid("give `count` (the most recent bars) or `from` (a range)")
    symbol_info(term, ctx, name)
    api, tm = term.api, ctx.tm
    if count is not None:
        if count > MAX_BARS:
            raise invalid("count is limited to %d bars" % MAX_BARS)
        if count == 0:
            return {"kind": "bars", "symbol": name, "timeframe": tf_name, "bars": []}
        if t is None:
            rows = _rates(term, "copy_rates_from_pos()", api.copy_rates_from_pos(name, tf, 0, count))
            bars = [M.bar_record(tm, r) for r in rows]
        else:
            rows = _rates(term, "copy_rates_from()", api.copy_rates_from(name, tf, tm.s_ceil(t), count + 1))
            bars = [b for b in (M.bar_record(tm, r) for r in rows) if b["time"] < t][-count:]
    else:
        assert f is not None
        end = t if t is not None else int(time.time() * 1000) + 86_400_000
        if f > end:
            raise invalid("`from` (%d) is after `to` (%d)" % (f, end))
        rows = _rates(term, "copy_rates_range()", api.copy_rates_range(name, tf, tm.s_floor(f), tm.s_ceil(end)))
        bars = [b for b in (M.bar_record(tm, r) for r in rows) if f <= b["time"] < end][-MAX_BARS:]
    bars.sort(key=lambda b: b["time"])
    return {"kind": "bars", "symbol": name, "timeframe": tf_name, "bars": bars}


def cmd_ticks(term: Terminal, ctx: Context, c: Dict[str, Any]) -> Dict[str, Any]:
    name = arg_str(c, "symbol")
    f, t = arg_range(c)
    limit = arg_int(c, "limit", required=False)
    symbol_info(term, ctx, name)
    arr = term.api.copy_ticks_range(name, ctx.tm.s_floor(f), ctx.tm.s_ceil(t) + 1, const(ctx.api, "COPY_TICKS_ALL"))
    rows = _rates(term, "copy_ticks_range()", arr)
    ticks = [x for x in (M.tick_record(ctx.tm, name, r) for r in rows) if f <= x["time"] < t]
    keep = MAX_TICKS if limit is None else min(limit, MAX_TICKS)
    ticks = ticks[-keep:] if keep else []
    return {"kind": "ticks", "symbol": name, "ticks": ticks}


def cmd_calendar(term: Terminal, ctx: Context, c: Dict[str, Any]) -> Dict[str, Any]:
    raise AgentError(
        "NOT_SUPPORTED",
        "the MetaTrader5 Python package has no economic calendar API; use the server calendar",
    )


# -- orders -----------------------------------------------------------------


def parse_order(c: Dict[str, Any]) -> Dict[str, Any]:
    """Checks an ``OrderRequest`` object."""
    o = c.get("order")
    if not isinstance(o, dict):
        raise invalid("`order` must be an object")
    kind = o.get("order_type")
    if kind not in M.ORDER_TYPES:
        raise invalid("`order_type` must be one of %s" % ", ".join(M.ORDER_TYPES))
    volume = arg_num(o, "volume")
    assert volume is not None
    if volume <= 0.0:
        raise invalid("`volume` must be positive")
    price = arg_num(o, "price", required=False)
    if kind not in ("BUY", "SELL") and (price is None or price <= 0.0):
        raise invalid("`price` is required for %s orders" % kind)
    comment = o.get("comment") or ""
    if not isinstance(comment, str):
        raise invalid("`comment` must be a string")
    stop_limit = arg_num(o, "stop_limit_price", required=False)
    if kind.endswith("_STOP_LIMIT") and (stop_limit is None or stop_limit <= 0.0):
        raise invalid("`stop_limit_price` is required for %s orders" % kind)
    expiration_mode = o.get("expiration_mode") or "GTC"
    if expiration_mode not in M.EXPIRATION_MODES:
        raise invalid("`expiration_mode` must be one of %s" % ", ".join(M.EXPIRATION_MODES))
    expiration = arg_int(o, "expiration", required=False)
    if expiration_mode in ("SPECIFIED", "SPECIFIED_DAY") and not expiration:
        raise invalid("`expiration` is required for %s" % expiration_mode)
    filling = o.get("filling")
    if filling is not None and filling not in M.FILLING_MODES:
        raise invalid("`filling` must be one of %s" % ", ".join(M.FILLING_MODES))
    return {
        "symbol": arg_str(o, "symbol"),
        "order_type": kind,
        "volume": volume,
        "price": price,
        "stop_loss": arg_num(o, "stop_loss", required=False),
        "take_profit": arg_num(o, "take_profit", required=False),
        "deviation_points": arg_int(o, "deviation_points", required=False),
        "comment": comment,
        "magic": arg_int(o, "magic", required=False) or 0,
        "stop_limit_price": stop_limit if kind.endswith("_STOP_LIMIT") else None,
        "expiration_mode": expiration_mode,
        "expiration": expiration,
        "filling": filling,
    }


def build_request(term: Terminal, ctx: Context, o: Dict[str, Any]) -> Tuple[Dict[str, Any], float]:
    """The ``MqlTradeRequest`` dict of an order, and its would-be price."""
    api = ctx.api
    s = symbol_info(term, ctx, o["symbol"])
    market = o["order_type"] in ("BUY", "SELL")
    if market:
        t = current_tick(term, ctx, o["symbol"])
        price = M.num(t.ask if o["order_type"] == "BUY" else t.bid)
        action = const(api, "TRADE_ACTION_DEAL")
    else:
        price = float(o["price"])
        action = const(api, "TRADE_ACTION_PENDING")
    dev = o["deviation_points"]
    request: Dict[str, Any] = {
        "action": action,
        "symbol": o["symbol"],
        "volume": float(o["volume"]),
        "type": M.order_type_code(api, o["order_type"]),
        "price": price,
        "sl": float(o["stop_loss"] or 0.0),
        "tp": float(o["take_profit"] or 0.0),
        "deviation": int(ctx.deviation if dev is None else dev),
        "magic": int(o["magic"]),
        "comment": o["comment"],
        "type_time": const(api, "ORDER_TIME_GTC"),
        "type_filling": M.filling_for(api, s, pending=not market),
    }
    if o.get("filling"):
        request["type_filling"] = const(api, "ORDER_FILLING_" + o["filling"])
    if not market:
        request["type_time"] = const(api, "ORDER_TIME_" + o.get("expiration_mode", "GTC"))
        if o.get("expiration") and o.get("expiration_mode") in ("SPECIFIED", "SPECIFIED_DAY"):
            # MqlTradeRequest.expiration is a datetime: seconds.
            request["expiration"] = int(o["expiration"]) // 1000
        if o.get("stop_limit_price"):
            request["stoplimit"] = float(o["stop_limit_price"])
            price = float(o["stop_limit_price"])
    return request, price


def cmd_order_check(term: Terminal, ctx: Context, c: Dict[str, Any]) -> Dict[str, Any]:
    o = parse_order(c)
    request, price = build_request(term, ctx, o)
    r = term.api.order_check(request)
    if r is None:
        raise term.failure("order_check()")
    code = int(r.retcode)
    # order_check answers 0 ("Done") for a valid request; some builds answer 10009.
    valid = code in (0, const(ctx.api, "TRADE_RETCODE_DONE"))
    margin_level = M.num(M.field(r, "margin_level", 0.0))
    return {
        "kind": "order_check",
        "valid": valid,
        "retcode": "done" if valid else retcode_name(code),
        "comment": str(M.field(r, "comment", "") or ""),
        "price": price,
        "margin": M.num(r.margin),
        "free_margin_after": M.num(r.margin_free),
        "margin_level_after": margin_level if margin_level > 0.0 else None,
    }


# -- trade commands ---------------------------------------------------------


def ensure_trading(term: Terminal, ctx: Context) -> None:
    """Refuses (``TRADING_DISABLED``) unless both switches are on, read fresh from the terminal."""
    if not ctx.allow_trading:
        raise AgentError("TRADING_DISABLED", "live trading is disabled: the bridge runs without --allow-trading")
    ti = term.api.terminal_info()
    if ti is None:
        raise term.failure("terminal_info()")
    ai = account(term)
    if not M.automated_trading(ti, ai):
        raise AgentError(
            "TRADING_DISABLED",
            "live trading is disabled on the terminal: the Algo Trading switch is off, "
            "the account does not allow expert trading, or trading via external APIs is off",
        )
    if not M.field(ti, "connected", True):
        raise AgentError("INTERNAL", "the terminal is not connected to the trade server")


def send(term: Terminal, request: Dict[str, Any]) -> Any:
    """``order_send``; ``None`` → the typed ``last_error()`` (never reported as done)."""
    r = term.api.order_send(request)
    if r is None:
        raise term.failure("order_send()")
    return r


def rejected(api: Any, r: Any) -> AgentError:
    code = int(r.retcode)
    name = retcode_name(code)
    comment = str(M.field(r, "comment", "") or "")
    msg = "%s (retcode %d %s)" % (comment or "rejected by the trade server", code, name)
    if code in (const(api, "TRADE_RETCODE_CLIENT_DISABLES_AT"), const(api, "TRADE_RETCODE_SERVER_DISABLES_AT")):
        return AgentError("TRADING_DISABLED", msg, name)
    return AgentError("TRADE_REJECTED", msg, name)


def succeeded(api: Any, r: Any) -> bool:
    return int(r.retcode) in (
        const(api, "TRADE_RETCODE_DONE"),
        const(api, "TRADE_RETCODE_DONE_PARTIAL"),
        const(api, "TRADE_RETCODE_PLACED"),
    )


def position_of_deal(term: Terminal, deal_ticket: int) -> int:
    if not deal_ticket:
        return 0
    found = term.api.history_deals_get(ticket=deal_ticket)
    if found:
        return int(M.field(found[0], "position_id", 0) or 0)
    return 0


def trade_result(term: Terminal, r: Any, position: Optional[int] = None) -> Dict[str, Any]:
    api = term.api
    placed = int(r.retcode) == const(api, "TRADE_RETCODE_PLACED")
    deal_ticket = int(M.field(r, "deal", 0) or 0)
    pos = position if position is not None else (0 if placed else position_of_deal(term, deal_ticket))
    partial = int(r.retcode) == const(api, "TRADE_RETCODE_DONE_PARTIAL")
    return {
        "retcode": "placed" if placed else ("done_partial" if partial else "done"),
        "order": int(M.field(r, "order", 0) or 0),
        "deal": deal_ticket,
        "position": pos,
        "volume": M.num(r.volume),
        "price": M.num(r.price),
        "comment": str(M.field(r, "comment", "") or ""),
    }


def send_market(term: Terminal, ctx: Context, request: Dict[str, Any], side_buy: bool) -> Any:
    """Sends a deal; after a requote / price change, once more at a fresh price."""
    r = send(term, request)
    if int(r.retcode) in REQUOTES:
        t = current_tick(term, ctx, request["symbol"])
        request = dict(request, price=M.num(t.ask if side_buy else t.bid))
        r = send(term, request)
    return r


def do_place(term: Terminal, ctx: Context, o: Dict[str, Any]) -> Dict[str, Any]:
    request, _ = build_request(term, ctx, o)
    if o["order_type"] in ("BUY", "SELL"):
        r = send_market(term, ctx, request, o["order_type"] == "BUY")
    else:
        r = send(term, request)
    if not succeeded(ctx.api, r):
        raise rejected(ctx.api, r)
    return trade_result(term, r)


def cmd_place_order(term: Terminal, ctx: Context, c: Dict[str, Any]) -> Dict[str, Any]:
    o = parse_order(c)
    ensure_trading(term, ctx)
    return dict(kind="trade", **do_place(term, ctx, o))


def open_position(term: Terminal, ticket: int) -> Any:
    found = term.api.positions_get(ticket=ticket)
    if found is None:
        down = _ipc_down(term)
        if down:
            raise down
        found = ()
    if not found:
        raise AgentError("NOT_FOUND", "no open position with ticket %d" % ticket)
    return found[0]


def do_close(term: Terminal, ctx: Context, ticket: int, volume: Optional[float], dev: Optional[int]) -> Dict[str, Any]:
    api = ctx.api
    p = open_position(term, ticket)
    pvol = M.num(p.volume)
    vol = pvol if volume is None else volume
    if vol <= 0.0 or vol > pvol + 1e-9:
        raise invalid("`volume` must be positive and at most the position's %s lots" % pvol)
    s = symbol_info(term, ctx, str(p.symbol))
    t = current_tick(term, ctx, str(p.symbol))
    buy = int(p.type) == const(api, "POSITION_TYPE_BUY")
    request = {
        "action": const(api, "TRADE_ACTION_DEAL"),
        "symbol": str(p.symbol),
        "volume": float(vol),
        "type": const(api, "ORDER_TYPE_SELL" if buy else "ORDER_TYPE_BUY"),
        "position": int(ticket),
        "price": M.num(t.bid if buy else t.ask),
        "deviation": int(ctx.deviation if dev is None else dev),
        "magic": int(M.field(p, "magic", 0) or 0),
        "comment": "",
        "type_time": const(api, "ORDER_TIME_GTC"),
        "type_filling": M.filling_for(api, s, pending=False),
    }
    r = send_market(term, ctx, request, side_buy=not buy)
    if not succeeded(api, r):
        raise rejected(api, r)
    return trade_result(term, r, position=int(ticket))


def cmd_close_position(term: Terminal, ctx: Context, c: Dict[str, Any]) -> Dict[str, Any]:
    ticket = arg_int(c, "ticket")
    volume = arg_num(c, "volume", required=False)
    dev = arg_int(c, "deviation_points", required=False)
    ensure_trading(term, ctx)
    assert ticket is not None
    return dict(kind="trade", **do_close(term, ctx, ticket, volume, dev))


def cmd_modify_position(term: Terminal, ctx: Context, c: Dict[str, Any]) -> Dict[str, Any]:
    api = ctx.api
    ticket = arg_int(c, "ticket")
    sl = arg_num(c, "stop_loss", required=False)
    tp = arg_num(c, "take_profit", required=False)
    ensure_trading(term, ctx)
    assert ticket is not None
    p = open_position(term, ticket)
    symbol_info(term, ctx, str(p.symbol))
    request = {
        "action": const(api, "TRADE_ACTION_SLTP"),
        "symbol": str(p.symbol),
        "position": int(ticket),
        "sl": float(sl or 0.0),
        "tp": float(tp or 0.0),
        "magic": int(M.field(p, "magic", 0) or 0),
    }
    r = send(term, request)
    no_change = int(r.retcode) == const(api, "TRADE_RETCODE_NO_CHANGES")
    if not (succeeded(api, r) or no_change):
        raise rejected(api, r)
    return {
        "kind": "trade",
        "retcode": "done",
        "order": int(M.field(r, "order", 0) or 0),
        "deal": 0,
        "position": int(ticket),
        "volume": M.num(p.volume),
        "price": M.num(p.price_open),
        "comment": str(M.field(r, "comment", "") or ""),
    }


def cmd_cancel_order(term: Terminal, ctx: Context, c: Dict[str, Any]) -> Dict[str, Any]:
    api = ctx.api
    ticket = arg_int(c, "ticket")
    ensure_trading(term, ctx)
    assert ticket is not None
    found = term.api.orders_get(ticket=ticket)
    if found is None:
        down = _ipc_down(term)
        if down:
            raise down
        found = ()
    if not found:
        raise AgentError("NOT_FOUND", "no pending order with ticket %d" % ticket)
    o = found[0]
    r = send(term, {"action": const(api, "TRADE_ACTION_REMOVE"), "order": int(ticket)})
    if not succeeded(api, r):
        raise rejected(api, r)
    return {
        "kind": "trade",
        "retcode": "done",
        "order": int(ticket),
        "deal": 0,
        "position": 0,
        "volume": M.num(M.field(o, "volume_current", 0.0)),
        "price": M.num(o.price_open),
        "comment": str(M.field(r, "comment", "") or ""),
    }


def cmd_reverse_position(term: Terminal, ctx: Context, c: Dict[str, Any]) -> Dict[str, Any]:
    api = ctx.api
    ticket = arg_int(c, "ticket")
    ensure_trading(term, ctx)
    assert ticket is not None
    p = open_position(term, ticket)
    buy = int(p.type) == const(api, "POSITION_TYPE_BUY")
    order = {
        "symbol": str(p.symbol),
        "order_type": "SELL" if buy else "BUY",
        "volume": M.num(p.volume),
        "price": None,
        "stop_loss": None,
        "take_profit": None,
        "deviation_points": None,
        "comment": "",
        "magic": int(M.field(p, "magic", 0) or 0),
    }
    closed = do_close(term, ctx, ticket, None, None)
    try:
        opened = do_place(term, ctx, order)
    except AgentError as e:
        raise AgentError(
            e.code,
            "position %d was closed (deal %d) but the opposite order failed: %s"
            % (ticket, closed["deal"], e.message),
            e.retcode,
            e.unknown_outcome,
        ) from e
    return {"kind": "reverse", "close": closed, "open": opened}


def cmd_modify_order(term: Terminal, ctx: Context, c: Dict[str, Any]) -> Dict[str, Any]:
    """``TRADE_ACTION_MODIFY``: the order's whole new state (absent SL/TP removes it)."""
    api = ctx.api
    ticket = arg_int(c, "ticket")
    price = arg_num(c, "price")
    stop_limit = arg_num(c, "stop_limit_price", required=False)
    sl = arg_num(c, "stop_loss", required=False)
    tp = arg_num(c, "take_profit", required=False)
    mode = c.get("expiration_mode") or "GTC"
    if mode not in M.EXPIRATION_MODES:
        raise invalid("`expiration_mode` must be one of %s" % ", ".join(M.EXPIRATION_MODES))
    expiration = arg_int(c, "expiration", required=False)
    if mode in ("SPECIFIED", "SPECIFIED_DAY") and not expiration:
        raise invalid("`expiration` is required for %s" % mode)
    ensure_trading(term, ctx)
    assert ticket is not None and price is not None
    found = term.api.orders_get(ticket=ticket)
    if found is None:
        down = _ipc_down(term)
        if down:
            raise down
        found = ()
    if not found:
        raise AgentError("NOT_FOUND", "no pending order with ticket %d" % ticket)
    o = found[0]
    symbol_info(term, ctx, str(o.symbol))
    request = {
        "action": const(api, "TRADE_ACTION_MODIFY"),
        "order": int(ticket),
        "symbol": str(o.symbol),
        "price": float(price),
        "stoplimit": float(stop_limit or 0.0),
        "sl": float(sl or 0.0),
        "tp": float(tp or 0.0),
        "type_time": const(api, "ORDER_TIME_" + mode),
        "expiration": int(expiration) // 1000 if expiration and mode in ("SPECIFIED", "SPECIFIED_DAY") else 0,
    }
    r = send(term, request)
    if not succeeded(api, r):
        raise rejected(api, r)
    return {
        "kind": "trade",
        "retcode": "done",
        "order": int(ticket),
        "deal": 0,
        "position": 0,
        "volume": M.num(M.field(o, "volume_current", 0.0)),
        "price": float(price),
        "comment": str(M.field(r, "comment", "") or ""),
    }


def cmd_close_by(term: Terminal, ctx: Context, c: Dict[str, Any]) -> Dict[str, Any]:
    """``TRADE_ACTION_CLOSE_BY`` (hedging accounts): ``position`` closed by ``position_by``."""
    api = ctx.api
    ticket = arg_int(c, "ticket")
    by = arg_int(c, "ticket_by")
    ensure_trading(term, ctx)
    assert ticket is not None and by is not None
    ai = account(term)
    if int(M.field(ai, "margin_mode", -1)) != const(api, "ACCOUNT_MARGIN_MODE_RETAIL_HEDGING"):
        raise AgentError(
            "TRADE_REJECTED",
            "close by needs a hedging account (ACCOUNT_MARGIN_MODE_RETAIL_HEDGING)",
            "invalid_request",
        )
    p = open_position(term, ticket)
    open_position(term, by)
    r = send(
        term,
        {
            "action": const(api, "TRADE_ACTION_CLOSE_BY"),
            "symbol": str(p.symbol),
            "position": int(ticket),
            "position_by": int(by),
            "magic": int(M.field(p, "magic", 0) or 0),
        },
    )
    if not succeeded(api, r):
        raise rejected(api, r)
    return dict(kind="trade", **trade_result(term, r, position=int(ticket)))


def _book_symbol(term: Terminal, ctx: Context, c: Dict[str, Any]) -> str:
    name = arg_str(c, "symbol")
    symbol_info(term, ctx, name)
    return name


def cmd_market_book_add(term: Terminal, ctx: Context, c: Dict[str, Any]) -> Dict[str, Any]:
    name = _book_symbol(term, ctx, c)
    if not term.api.market_book_add(name):
        raise term.failure("market_book_add()")
    return {"kind": "market_book_subscription", "symbol": name, "subscribed": True}


def cmd_market_book_release(term: Terminal, ctx: Context, c: Dict[str, Any]) -> Dict[str, Any]:
    name = _book_symbol(term, ctx, c)
    if not term.api.market_book_release(name):
        raise term.failure("market_book_release()")
    return {"kind": "market_book_subscription", "symbol": name, "subscribed": False}


def cmd_market_book_get(term: Terminal, ctx: Context, c: Dict[str, Any]) -> Dict[str, Any]:
    api = ctx.api
    name = _book_symbol(term, ctx, c)
    book = term.api.market_book_get(name)
    if book is None:
        raise term.failure("market_book_get()")
    sides = {
        const(api, "BOOK_TYPE_SELL"): "sell",
        const(api, "BOOK_TYPE_BUY"): "buy",
        const(api, "BOOK_TYPE_SELL_MARKET"): "sell_market",
        const(api, "BOOK_TYPE_BUY_MARKET"): "buy_market",
    }
    levels = []
    for b in book:
        side = sides.get(int(b.type))
        if side is None:
            continue
        volume = M.num(M.field(b, "volume_dbl", 0.0)) or M.num(b.volume)
        levels.append({"type": side, "price": M.num(b.price), "volume": volume})
    t = current_tick(term, ctx, name)
    return {"kind": "market_book", "symbol": name, "time": M.msc_or_s(ctx.tm, t, "time"), "levels": levels}


HANDLERS: Dict[str, Callable[[Terminal, Context, Dict[str, Any]], Dict[str, Any]]] = {
    "account_info": cmd_account_info,
    "positions": cmd_positions,
    "orders": cmd_orders,
    "history_deals": cmd_history_deals,
    "history_orders": cmd_history_orders,
    "symbols": cmd_symbols,
    "symbol_spec": cmd_symbol_spec,
    "tick": cmd_tick,
    "bars": cmd_bars,
    "ticks": cmd_ticks,
    "order_check": cmd_order_check,
    "place_order": cmd_place_order,
    "close_position": cmd_close_position,
    "modify_position": cmd_modify_position,
    "cancel_order": cmd_cancel_order,
    "reverse_position": cmd_reverse_position,
    "calendar": cmd_calendar,
    "modify_order": cmd_modify_order,
    "close_by": cmd_close_by,
    "market_book_add": cmd_market_book_add,
    "market_book_get": cmd_market_book_get,
    "market_book_release": cmd_market_book_release,
}

#: Commands that change the account.
TRADE_COMMANDS = frozenset(
    ["place_order", "close_position", "modify_position", "cancel_order", "reverse_position", "modify_order", "close_by"]
)


def idempotency_key(command: Dict[str, Any]) -> Optional[str]:
    """The command's idempotency key (``order.idempotency_key`` for ``place_order``)."""
    if command.get("cmd") == "place_order":
        order = command.get("order")
        return order.get("idempotency_key") if isinstance(order, dict) else None
    if command.get("cmd") in ("close_position", "reverse_position", "modify_order", "close_by"):
        return command.get("idempotency_key")
    return None


def execute(term: Terminal, ctx: Context, command: Dict[str, Any]) -> Dict[str, Any]:
    """Runs one command (inside a job). Unexpected exceptions become ``INTERNAL``."""
    name = command.get("cmd")
    handler = HANDLERS.get(name) if isinstance(name, str) else None
    if handler is None:
        raise AgentError("UNKNOWN_COMMAND", "this agent does not implement `%s`" % (name,))
    try:
        return handler(term, ctx, command)
    except AgentError:
        raise
    except Exception as e:  # a broken terminal link must not kill the bridge
        raise AgentError("INTERNAL", "%s failed: %s: %s" % (name, type(e).__name__, e)) from e
