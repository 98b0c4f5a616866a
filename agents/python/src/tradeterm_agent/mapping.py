"""Pure conversions between the MetaTrader5 package's named tuples / numpy
records and agent protocol v1 objects.

Field names are the documented ones (``AccountInfo.margin_free``,
``TradePosition.price_open``, ``Tick.time_msc``, rates ``tick_volume``, ...).
Fields are read with ``getattr``/``[]`` only, so named tuples, rpyc proxies
(mt5linux) and numpy records all work. Times: the package gives seconds
(``time``) and milliseconds (``*_msc``) in the terminal's clock; the protocol
wants unix milliseconds UTC. ``TimeMap`` converts both ways with an optional
fixed offset (``--server-time-offset``; 0 = the terminal reports UTC, as the
package documents).
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional

from .constants import const

TIMEFRAMES = ("M1", "M5", "M15", "M30", "H1", "H4", "D1", "W1", "MN1")

ORDER_TYPES = ("BUY", "SELL", "BUY_LIMIT", "SELL_LIMIT", "BUY_STOP", "SELL_STOP", "BUY_STOP_LIMIT", "SELL_STOP_LIMIT")
#: Protocol expiration modes, in ``ORDER_TIME_*`` order (``SYMBOL_EXPIRATION_*`` flags 1, 2, 4, 8).
EXPIRATION_MODES = ("GTC", "DAY", "SPECIFIED", "SPECIFIED_DAY")
#: Protocol filling policies.
FILLING_MODES = ("FOK", "IOC", "RETURN")


class TimeMap:
    """Terminal clock ↔ unix ms UTC. ``offset_s`` = terminal time − UTC."""

    def __init__(self, offset_s: int = 0) -> None:
        self.offset_s = int(offset_s)

    def ms_from_s(self, t: Any) -> int:
        """Terminal seconds → unix ms UTC."""
        return (int(t) - self.offset_s) * 1000

    def ms_from_msc(self, t: Any) -> int:
        """Terminal milliseconds → unix ms UTC."""
        return int(t) - self.offset_s * 1000

    def s_floor(self, ms: int) -> int:
        """Unix ms UTC → terminal seconds, rounded down."""
        return ms // 1000 + self.offset_s

    def s_ceil(self, ms: int) -> int:
        """Unix ms UTC → terminal seconds, rounded up."""
        return -((-ms) // 1000) + self.offset_s


def field(obj: Any, name: str, default: Any = None) -> Any:
    """A named-tuple field, or ``default`` when this build lacks it."""
    return getattr(obj, name, default)


def num(x: Any) -> float:
    """A finite float (NaN/inf become 0.0: JSON has no such numbers)."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return 0.0
    return v if math.isfinite(v) else 0.0


def level(x: Any) -> Optional[float]:
    """A stop level: MetaTrader's 0.0 means none."""
    v = num(x)
    return v if v > 0.0 else None


def msc_or_s(tm: TimeMap, obj: Any, base: str) -> int:
    """``<base>_msc`` if present and non-zero, else ``<base>`` seconds, as unix ms UTC."""
    msc = field(obj, base + "_msc")
    if msc:
        return tm.ms_from_msc(msc)
    return tm.ms_from_s(field(obj, base, 0) or 0)


def trade_mode_name(api: Any, mode: Any) -> Optional[str]:
    """``AccountInfo.trade_mode`` → ``demo|contest|real``; ``None`` if unknown (never guessed)."""
    table = {
        const(api, "ACCOUNT_TRADE_MODE_DEMO"): "demo",
        const(api, "ACCOUNT_TRADE_MODE_CONTEST"): "contest",
        const(api, "ACCOUNT_TRADE_MODE_REAL"): "real",
    }
    try:
        return table.get(int(mode))
    except (TypeError, ValueError):
        return None


def account_info(api: Any, a: Any) -> Dict[str, Any]:
    """``AccountInfo`` → protocol ``AccountInfo`` (without ``kind``)."""
    margin = num(a.margin)
    mode = trade_mode_name(api, a.trade_mode)
    return {
        "login": int(a.login),
        "name": str(field(a, "name", "") or ""),
        "server": str(a.server or ""),
        "company": str(field(a, "company", "") or ""),
        "currency": str(a.currency or ""),
        "leverage": int(a.leverage or 0),
        "trade_mode": mode,
        "balance": num(a.balance),
        "equity": num(a.equity),
        "margin": margin,
        "free_margin": num(a.margin_free),
        "margin_level": num(a.margin_level) if margin > 0.0 else None,
        "profit": num(a.profit),
    }


def automated_trading(terminal: Any, account: Any) -> bool:
    """The terminal's automated-trading switch as it applies to this bridge:
    ``terminal_info().trade_allowed`` ("Algo Trading" button) and
    ``account_info().trade_expert`` (the account allows experts), and not
    ``terminal_info().tradeapi_disabled`` (trading through external APIs off).
    Unknown (a call failed) is ``False``: fail closed."""
    if terminal is None or account is None:
        return False
    return (
        bool(field(terminal, "trade_allowed", False))
        and bool(field(account, "trade_expert", False))
        and not bool(field(terminal, "tradeapi_disabled", False))
    )


def position(api: Any, tm: TimeMap, p: Any) -> Dict[str, Any]:
    """``TradePosition`` → protocol ``Position``."""
    side = "buy" if int(p.type) == const(api, "POSITION_TYPE_BUY") else "sell"
    return {
        "ticket": int(p.ticket),
        "symbol": str(p.symbol),
        "side": side,
        "volume": num(p.volume),
        "open_price": num(p.price_open),
        "open_time": msc_or_s(tm, p, "time"),
        "stop_loss": level(p.sl),
        "take_profit": level(p.tp),
        "current_price": num(p.price_current),
        "swap": num(field(p, "swap", 0.0)),
        # TradePosition has no commission in current builds (it is on the deals).
        "commission": num(field(p, "commission", 0.0)),
        "profit": num(p.profit),
        "magic": int(field(p, "magic", 0) or 0),
        "comment": str(field(p, "comment", "") or ""),
    }


def order_type_name(api: Any, t: Any) -> Optional[str]:
    """``ORDER_TYPE_*`` → protocol name; ``None`` for types the protocol lacks (close-by)."""
    for name in ORDER_TYPES:
        if int(t) == const(api, "ORDER_TYPE_" + name):
            return name
    return None


def order_type_code(api: Any, name: str) -> int:
    """Protocol order type → ``ORDER_TYPE_*``."""
    return const(api, "ORDER_TYPE_" + name)


def pending_order(api: Any, tm: TimeMap, o: Any) -> Optional[Dict[str, Any]]:
    """Active ``TradeOrder`` → protocol ``PendingOrder`` (``None`` for types the protocol lacks)."""
    kind = order_type_name(api, o.type)
    if kind is None or kind in ("BUY", "SELL"):
        return None
    return {
        "ticket": int(o.ticket),
        "symbol": str(o.symbol),
        "order_type": kind,
        "volume": num(field(o, "volume_current", 0.0) or field(o, "volume_initial", 0.0)),
        "price": num(o.price_open),
        "stop_loss": level(o.sl),
        "take_profit": level(o.tp),
        "time_setup": msc_or_s(tm, o, "time_setup"),
        "magic": int(field(o, "magic", 0) or 0),
        "comment": str(field(o, "comment", "") or ""),
        "stop_limit_price": level(field(o, "price_stoplimit", 0.0)) if kind.endswith("_STOP_LIMIT") else None,
        "expiration_mode": expiration_name(api, field(o, "type_time", 0)),
        "expiration": expiration_ms(api, o),
    }


def expiration_name(api: Any, type_time: Any) -> str:
    """``ORDER_TIME_*`` → protocol expiration mode (``GTC`` for an unknown one)."""
    for name in EXPIRATION_MODES:
        if int(type_time or 0) == const(api, "ORDER_TIME_" + name):
            return name
    return "GTC"


def expiration_ms(api: Any, o: Any) -> Optional[int]:
    """The expiry of a ``SPECIFIED`` / ``SPECIFIED_DAY`` order, unix ms (``time_expiration`` is seconds)."""
    if expiration_name(api, field(o, "type_time", 0)) not in ("SPECIFIED", "SPECIFIED_DAY"):
        return None
    t = int(field(o, "time_expiration", 0) or 0)
    return t * 1000 if t > 0 else None


def expiration_modes(s: Any) -> List[str]:
    """``SYMBOL_EXPIRATION_MODE`` flags (GTC 1, DAY 2, SPECIFIED 4, SPECIFIED_DAY 8) → protocol names."""
    bits = int(field(s, "expiration_mode", 0) or 0)
    return [name for i, name in enumerate(EXPIRATION_MODES) if bits & (1 << i)]


def filling_modes(api: Any, s: Any) -> List[str]:
    """``SYMBOL_FILLING_MODE`` flags (FOK 1, IOC 2) → protocol names, with RETURN
    unless the symbol is in market execution (``SYMBOL_TRADE_EXECUTION_MARKET``),
    where MT5 does not allow it."""
    bits = int(field(s, "filling_mode", 0) or 0)
    out = []
    if bits & const(api, "SYMBOL_FILLING_FOK"):
        out.append("FOK")
    if bits & const(api, "SYMBOL_FILLING_IOC"):
        out.append("IOC")
    if int(field(s, "trade_exemode", -1)) != const(api, "SYMBOL_TRADE_EXECUTION_MARKET"):
        out.append("RETURN")
    return out


def history_order(api: Any, tm: TimeMap, o: Any) -> Optional[Dict[str, Any]]:
    """Historical ``TradeOrder`` → protocol ``HistoryOrder`` (``None`` when unfinished or of another type)."""
    # A close-by is in the history as an order of its own type (it is never pending).
    kind = "CLOSE_BY" if int(o.type) == const(api, "ORDER_TYPE_CLOSE_BY") else order_type_name(api, o.type)
    states = {
        const(api, "ORDER_STATE_FILLED"): "filled",
        const(api, "ORDER_STATE_PARTIAL"): "filled",
        const(api, "ORDER_STATE_CANCELED"): "canceled",
        const(api, "ORDER_STATE_REJECTED"): "rejected",
        const(api, "ORDER_STATE_EXPIRED"): "expired",
    }
    state = states.get(int(o.state))
    if kind is None or state is None:
        return None
    price = num(o.price_open) or num(field(o, "price_current", 0.0))
    return {
        "ticket": int(o.ticket),
        "symbol": str(o.symbol),
        "order_type": kind,
        "volume": num(field(o, "volume_initial", 0.0)),
        "price": price,
        "state": state,
        "time_setup": msc_or_s(tm, o, "time_setup"),
        "time_done": msc_or_s(tm, o, "time_done"),
        "position": int(field(o, "position_id", 0) or 0),
        "comment": str(field(o, "comment", "") or ""),
        "magic": int(field(o, "magic", 0) or 0),
    }


def deal(api: Any, tm: TimeMap, d: Any) -> Dict[str, Any]:
    """``TradeDeal`` → protocol ``Deal``."""
    dtype = int(d.type)
    trade = dtype in (const(api, "DEAL_TYPE_BUY"), const(api, "DEAL_TYPE_SELL"))
    entry_code = int(d.entry)
    if not trade:
        entry = "balance"
    elif entry_code == const(api, "DEAL_ENTRY_IN"):
        entry = "in"
    elif entry_code == const(api, "DEAL_ENTRY_OUT_BY"):
        entry = "out_by"  # one of the two deals of a close-by
    else:  # OUT, and INOUT (a netting reversal closes first)
        entry = "out"
    if trade:
        side = "buy" if dtype == const(api, "DEAL_TYPE_BUY") else "sell"
    else:
        side = "buy" if num(d.profit) >= 0.0 else "sell"
    raw_reason = field(d, "reason", None)
    reason = int(raw_reason) if raw_reason is not None else -1
    comment = str(field(d, "comment", "") or "")
    if reason == const(api, "DEAL_REASON_SL"):
        comment = "sl"
    elif reason == const(api, "DEAL_REASON_TP"):
        comment = "tp"
    return {
        "ticket": int(d.ticket),
        "order": int(field(d, "order", 0) or 0),
        "position": int(field(d, "position_id", 0) or 0),
        "symbol": str(field(d, "symbol", "") or ""),
        "side": side,
        "entry": entry,
        "volume": num(d.volume),
        "price": num(d.price),
        "time": msc_or_s(tm, d, "time"),
        "profit": num(d.profit),
        "swap": num(field(d, "swap", 0.0)),
        # The protocol has one charge field: commission plus the fee.
        "commission": num(field(d, "commission", 0.0)) + num(field(d, "fee", 0.0)),
        "magic": int(field(d, "magic", 0) or 0),
        "comment": comment,
    }


def tick(tm: TimeMap, symbol: str, t: Any) -> Dict[str, Any]:
    """``Tick`` (named tuple) → protocol ``Tick``."""
    return {
        "symbol": symbol,
        "bid": num(t.bid),
        "ask": num(t.ask),
        "time": msc_or_s(tm, t, "time"),
    }


#: Field order of the documented numpy dtypes (used when a record is a plain tuple).
RATE_FIELDS = ("time", "open", "high", "low", "close", "tick_volume", "spread", "real_volume")
TICK_FIELDS = ("time", "bid", "ask", "last", "volume", "time_msc", "flags", "volume_real")


def rec(r: Any, name: str, order: tuple) -> Any:
    """A field of a numpy record by name (``r["time"]``), or of a plain tuple by its documented position."""
    try:
        return r[name]
    except (IndexError, KeyError, TypeError, ValueError):
        return r[order.index(name)]


def tick_record(tm: TimeMap, symbol: str, r: Any) -> Dict[str, Any]:
    """A record of ``copy_ticks_*`` (dtype time, bid, ask, last, volume, time_msc, flags, volume_real)."""
    msc = int(rec(r, "time_msc", TICK_FIELDS))
    return {
        "symbol": symbol,
        "bid": num(rec(r, "bid", TICK_FIELDS)),
        "ask": num(rec(r, "ask", TICK_FIELDS)),
        "time": tm.ms_from_msc(msc) if msc else tm.ms_from_s(rec(r, "time", TICK_FIELDS)),
    }


def bar_record(tm: TimeMap, r: Any) -> Dict[str, Any]:
    """A record of ``copy_rates_*`` (dtype time, open, high, low, close, tick_volume, spread, real_volume)."""
    return {
        "time": tm.ms_from_s(rec(r, "time", RATE_FIELDS)),
        "open": num(rec(r, "open", RATE_FIELDS)),
        "high": num(rec(r, "high", RATE_FIELDS)),
        "low": num(rec(r, "low", RATE_FIELDS)),
        "close": num(rec(r, "close", RATE_FIELDS)),
        "volume": num(rec(r, "tick_volume", RATE_FIELDS)),
    }


def timeframe_code(api: Any, name: str) -> int:
    """Protocol timeframe → ``TIMEFRAME_*``."""
    if name not in TIMEFRAMES:
        raise ValueError("unknown timeframe %r (expected one of %s)" % (name, " ".join(TIMEFRAMES)))
    return const(api, "TIMEFRAME_" + name)


def swap_mode(api: Any, mode: Any) -> str:
    """``SymbolInfo.swap_mode`` → ``disabled|points|currency|interest``."""
    m = int(mode)
    if m == const(api, "SYMBOL_SWAP_MODE_DISABLED"):
        return "disabled"
    if m in (
        const(api, "SYMBOL_SWAP_MODE_CURRENCY_SYMBOL"),
        const(api, "SYMBOL_SWAP_MODE_CURRENCY_MARGIN"),
        const(api, "SYMBOL_SWAP_MODE_CURRENCY_DEPOSIT"),
    ):
        return "currency"
    if m in (const(api, "SYMBOL_SWAP_MODE_INTEREST_CURRENT"), const(api, "SYMBOL_SWAP_MODE_INTEREST_OPEN")):
        return "interest"
    return "points"  # POINTS, and the REOPEN modes (a reopen shifted by points)


def margin_mode(api: Any, calc: Any) -> str:
    """``SymbolInfo.trade_calc_mode`` → ``forex|cfd_leverage|cfd``."""
    c = int(calc)
    if c in (const(api, "SYMBOL_CALC_MODE_FOREX"), const(api, "SYMBOL_CALC_MODE_FOREX_NO_LEVERAGE")):
        return "forex"
    if c == const(api, "SYMBOL_CALC_MODE_CFDLEVERAGE"):
        return "cfd_leverage"
    return "cfd"


def tick_value_profit_ccy(api: Any, s: Any, account_currency: str) -> float:
    """Value of one tick for one lot in the symbol's profit currency.
    ``trade_tick_value`` is in the deposit currency; for FX and CFDs the
    profit-currency value is ``tick_size * contract_size``."""
    size = num(s.trade_tick_size)
    contract = num(s.trade_contract_size)
    linear = (
        const(api, "SYMBOL_CALC_MODE_FOREX"),
        const(api, "SYMBOL_CALC_MODE_FOREX_NO_LEVERAGE"),
        const(api, "SYMBOL_CALC_MODE_CFD"),
        const(api, "SYMBOL_CALC_MODE_CFDINDEX"),
        const(api, "SYMBOL_CALC_MODE_CFDLEVERAGE"),
    )
    if int(field(s, "trade_calc_mode", 0)) in linear and size > 0.0 and contract > 0.0:
        return size * contract
    if str(field(s, "currency_profit", "")) == account_currency:
        return num(s.trade_tick_value)
    return size * contract if size > 0.0 and contract > 0.0 else num(s.trade_tick_value)


def symbol_spec(api: Any, s: Any, account_currency: str) -> Dict[str, Any]:
    """``SymbolInfo`` → protocol ``SymbolSpec``. The package has no trading-hours
    call (``SymbolInfoSessionTrade``; the ``session_*`` fields are session
    statistics), so ``sessions`` is empty; the terminal still refuses orders
    when its market is closed (``market_closed``)."""
    return {
        "name": str(s.name),
        "description": str(field(s, "description", "") or ""),
        "currency_base": str(field(s, "currency_base", "") or ""),
        "currency_profit": str(field(s, "currency_profit", "") or ""),
        "currency_margin": str(field(s, "currency_margin", "") or ""),
        "digits": int(s.digits),
        "point": num(s.point),
        "contract_size": num(s.trade_contract_size),
        "tick_size": num(s.trade_tick_size),
        "tick_value": tick_value_profit_ccy(api, s, account_currency),
        "volume_min": num(s.volume_min),
        "volume_max": num(s.volume_max),
        "volume_step": num(s.volume_step),
        "stops_level": max(0, int(field(s, "trade_stops_level", 0) or 0)),
        "swap_long": num(field(s, "swap_long", 0.0)),
        "swap_short": num(field(s, "swap_short", 0.0)),
        "swap_mode": swap_mode(api, field(s, "swap_mode", 0)),
        "swap_triple_day": int(field(s, "swap_rollover3days", 3)) % 7,
        "margin_mode": margin_mode(api, field(s, "trade_calc_mode", 0)),
        "margin_rate": 1.0,
        "sessions": [],
        "expiration_modes": expiration_modes(s),
        "filling_modes": filling_modes(api, s),
    }


def filling_for(api: Any, s: Any, pending: bool) -> int:
    """An ``ORDER_FILLING_*`` the symbol allows, as MetaQuotes' CTrade picks it:
    pending orders use RETURN; market orders use FOK if the symbol's
    ``filling_mode`` has SYMBOL_FILLING_FOK, else IOC if it has
    SYMBOL_FILLING_IOC, else RETURN (allowed in request, instant and exchange
    execution)."""
    if pending:
        return const(api, "ORDER_FILLING_RETURN")
    bits = int(field(s, "filling_mode", 0) or 0)
    if bits & const(api, "SYMBOL_FILLING_FOK"):
        return const(api, "ORDER_FILLING_FOK")
    if bits & const(api, "SYMBOL_FILLING_IOC"):
        return const(api, "ORDER_FILLING_IOC")
    return const(api, "ORDER_FILLING_RETURN")


def records(arr: Any) -> List[Any]:
    """The records of a numpy structured array (or any sequence), ``[]`` for ``None``."""
    if arr is None:
        return []
    return list(arr)
