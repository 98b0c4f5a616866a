"""Constants of the MetaTrader5 Python package, with their documented values.

The bridge always reads a constant from the terminal API object it was given
(``mt5.ORDER_TYPE_BUY``), so a module or an ``mt5linux.MetaTrader5()``
instance supplies its own values. The numbers here are the documented ones,
used only when the object does not expose the name.
"""

from __future__ import annotations

from typing import Any, Dict

DOCUMENTED: Dict[str, int] = {
    # Timeframes (ENUM_TIMEFRAMES: minutes, hours | 0x4000, weeks | 0x8000, months | 0xC000).
    "TIMEFRAME_M1": 1,
    "TIMEFRAME_M5": 5,
    "TIMEFRAME_M15": 15,
    "TIMEFRAME_M30": 30,
    "TIMEFRAME_H1": 0x4000 | 1,
    "TIMEFRAME_H4": 0x4000 | 4,
    "TIMEFRAME_D1": 0x4000 | 24,
    "TIMEFRAME_W1": 0x8000 | 1,
    "TIMEFRAME_MN1": 0xC000 | 1,
    # Order types.
    "ORDER_TYPE_BUY": 0,
    "ORDER_TYPE_SELL": 1,
    "ORDER_TYPE_BUY_LIMIT": 2,
    "ORDER_TYPE_SELL_LIMIT": 3,
    "ORDER_TYPE_BUY_STOP": 4,
    "ORDER_TYPE_SELL_STOP": 5,
    "ORDER_TYPE_BUY_STOP_LIMIT": 6,
    "ORDER_TYPE_SELL_STOP_LIMIT": 7,
    "ORDER_TYPE_CLOSE_BY": 8,
    # Trade request actions.
    "TRADE_ACTION_DEAL": 1,
    "TRADE_ACTION_PENDING": 5,
    "TRADE_ACTION_SLTP": 6,
    "TRADE_ACTION_MODIFY": 7,
    "TRADE_ACTION_REMOVE": 8,
    "TRADE_ACTION_CLOSE_BY": 10,
    # Filling policies of a request.
    "ORDER_FILLING_FOK": 0,
    "ORDER_FILLING_IOC": 1,
    "ORDER_FILLING_RETURN": 2,
    "ORDER_FILLING_BOC": 3,
    # Expiration.
    "ORDER_TIME_GTC": 0,
    "ORDER_TIME_DAY": 1,
    "ORDER_TIME_SPECIFIED": 2,
    "ORDER_TIME_SPECIFIED_DAY": 3,
    # Order states.
    "ORDER_STATE_STARTED": 0,
    "ORDER_STATE_PLACED": 1,
    "ORDER_STATE_CANCELED": 2,
    "ORDER_STATE_PARTIAL": 3,
    "ORDER_STATE_FILLED": 4,
    "ORDER_STATE_REJECTED": 5,
    "ORDER_STATE_EXPIRED": 6,
    # Positions.
    "POSITION_TYPE_BUY": 0,
    "POSITION_TYPE_SELL": 1,
    # Deals.
    "DEAL_TYPE_BUY": 0,
    "DEAL_TYPE_SELL": 1,
    "DEAL_TYPE_BALANCE": 2,
    "DEAL_ENTRY_IN": 0,
    "DEAL_ENTRY_OUT": 1,
    "DEAL_ENTRY_INOUT": 2,
    "DEAL_ENTRY_OUT_BY": 3,
    "DEAL_REASON_SL": 4,
    "DEAL_REASON_TP": 5,
    # Account.
    "ACCOUNT_TRADE_MODE_DEMO": 0,
    "ACCOUNT_TRADE_MODE_CONTEST": 1,
    "ACCOUNT_TRADE_MODE_REAL": 2,
    # Ticks.
    "COPY_TICKS_ALL": -1,
    # Symbol properties.
    "SYMBOL_FILLING_FOK": 1,
    "SYMBOL_FILLING_IOC": 2,
    "SYMBOL_TRADE_EXECUTION_REQUEST": 0,
    "SYMBOL_TRADE_EXECUTION_INSTANT": 1,
    "SYMBOL_TRADE_EXECUTION_MARKET": 2,
    "ACCOUNT_MARGIN_MODE_RETAIL_NETTING": 0,
    "ACCOUNT_MARGIN_MODE_EXCHANGE": 1,
    "ACCOUNT_MARGIN_MODE_RETAIL_HEDGING": 2,
    "BOOK_TYPE_SELL": 1,
    "BOOK_TYPE_BUY": 2,
    "BOOK_TYPE_SELL_MARKET": 3,
    "BOOK_TYPE_BUY_MARKET": 4,
    "SYMBOL_TRADE_EXECUTION_EXCHANGE": 3,
    "SYMBOL_TRADE_MODE_DISABLED": 0,
    "SYMBOL_CALC_MODE_FOREX": 0,
    "SYMBOL_CALC_MODE_FUTURES": 1,
    "SYMBOL_CALC_MODE_CFD": 2,
    "SYMBOL_CALC_MODE_CFDINDEX": 3,
    "SYMBOL_CALC_MODE_CFDLEVERAGE": 4,
    "SYMBOL_CALC_MODE_FOREX_NO_LEVERAGE": 5,
    "SYMBOL_SWAP_MODE_DISABLED": 0,
    "SYMBOL_SWAP_MODE_POINTS": 1,
    "SYMBOL_SWAP_MODE_CURRENCY_SYMBOL": 2,
    "SYMBOL_SWAP_MODE_CURRENCY_MARGIN": 3,
    "SYMBOL_SWAP_MODE_CURRENCY_DEPOSIT": 4,
    "SYMBOL_SWAP_MODE_INTEREST_CURRENT": 5,
    "SYMBOL_SWAP_MODE_INTEREST_OPEN": 6,
    "SYMBOL_SWAP_MODE_REOPEN_CURRENT": 7,
    "SYMBOL_SWAP_MODE_REOPEN_BID": 8,
    # Trade server return codes.
    "TRADE_RETCODE_REQUOTE": 10004,
    "TRADE_RETCODE_REJECT": 10006,
    "TRADE_RETCODE_CANCEL": 10007,
    "TRADE_RETCODE_PLACED": 10008,
    "TRADE_RETCODE_DONE": 10009,
    "TRADE_RETCODE_DONE_PARTIAL": 10010,
    "TRADE_RETCODE_ERROR": 10011,
    "TRADE_RETCODE_TIMEOUT": 10012,
    "TRADE_RETCODE_INVALID": 10013,
    "TRADE_RETCODE_INVALID_VOLUME": 10014,
    "TRADE_RETCODE_INVALID_PRICE": 10015,
    "TRADE_RETCODE_INVALID_STOPS": 10016,
    "TRADE_RETCODE_TRADE_DISABLED": 10017,
    "TRADE_RETCODE_MARKET_CLOSED": 10018,
    "TRADE_RETCODE_NO_MONEY": 10019,
    "TRADE_RETCODE_PRICE_CHANGED": 10020,
    "TRADE_RETCODE_PRICE_OFF": 10021,
    "TRADE_RETCODE_NO_CHANGES": 10025,
    "TRADE_RETCODE_SERVER_DISABLES_AT": 10026,
    "TRADE_RETCODE_CLIENT_DISABLES_AT": 10027,
}

#: Trade server return codes → the protocol's retcode names (the
#: ``TRADE_RETCODE_*`` names without prefix, lower case).
RETCODE_NAMES: Dict[int, str] = {
    10004: "requote",
    10006: "reject",
    10007: "cancel",
    10008: "placed",
    10009: "done",
    10010: "done_partial",
    10011: "error",
    10012: "timeout",
    10013: "invalid",
    10014: "invalid_volume",
    10015: "invalid_price",
    10016: "invalid_stops",
    10017: "trade_disabled",
    10018: "market_closed",
    10019: "no_money",
    10020: "price_changed",
    10021: "price_off",
    10022: "invalid_expiration",
    10023: "order_changed",
    10024: "too_many_requests",
    10025: "no_changes",
    10026: "server_disables_at",
    10027: "client_disables_at",
    10028: "locked",
    10029: "frozen",
    10030: "invalid_fill",
    10031: "connection",
    10032: "only_real",
    10033: "limit_orders",
    10034: "limit_volume",
    10035: "invalid_order",
    10036: "position_closed",
    10038: "invalid_close_volume",
    10039: "close_order_exist",
    10040: "limit_positions",
    10041: "reject_cancel",
    10042: "long_only",
    10043: "short_only",
    10044: "close_only",
    10045: "fifo_close",
    10046: "hedge_prohibited",
}

#: ``last_error()`` codes of the package (its own codes, not MQL5's).
RES_S_OK = 1
RES_E_FAIL = -1
RES_E_INVALID_PARAMS = -2
RES_E_NOT_FOUND = -4
RES_E_AUTH_FAILED = -6
RES_E_AUTO_TRADING_DISABLED = -8
#: -10000 … -10005: the IPC link to the terminal failed (-10004: "No IPC connection").
IPC_ERRORS = range(-10005, -9999)


def retcode_name(code: int) -> str:
    """The protocol's name of a trade server return code (``retcode_N`` when unknown)."""
    return RETCODE_NAMES.get(int(code), "retcode_%d" % int(code))


def const(mt5: Any, name: str) -> int:
    """A constant of the terminal API object, or its documented value."""
    value = getattr(mt5, name, None)
    if value is None:
        return DOCUMENTED[name]
    return int(value)
