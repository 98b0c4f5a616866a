"""A fake of the ``MetaTrader5`` Python package, following its documented API.

Names and signatures as documented on the MQL5 "Python Integration" pages
(positional-only where the docs say "unnamed"), named tuples with the
documented fields (AccountInfo, TerminalInfo, SymbolInfo, Tick, TradePosition,
TradeOrder, TradeDeal, TradeRequest, OrderCheckResult, OrderSendResult), numpy
structured arrays with the documented dtypes for rates and ticks, the
``TRADE_RETCODE_*`` codes and the package's own ``last_error()`` codes.

Behind it: a small deterministic market (quotes are a function of the wall
clock, changing every 250 ms), a hedging demo account in USD, and switches for
faults (``disconnected``, ``market_closed``, ``no_money``, ``invalid_stops``,
``reject_next``, ``delay``). Use a ``FakeMT5()`` instance as the terminal API,
or this module itself (``--mt5-module fake_mt5``), which forwards to one
shared instance.
"""

from __future__ import annotations

import fnmatch
import math
import threading
import time as _time
from collections import namedtuple
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

# -- documented named tuples -------------------------------------------------

AccountInfo = namedtuple(
    "AccountInfo",
    "login trade_mode leverage limit_orders margin_so_mode trade_allowed trade_expert margin_mode "
    "currency_digits fifo_close balance credit profit equity margin margin_free margin_level "
    "margin_so_call margin_so_so margin_initial margin_maintenance assets liabilities "
    "commission_blocked name server currency company",
)
TerminalInfo = namedtuple(
    "TerminalInfo",
    "community_account community_connection connected dlls_allowed trade_allowed tradeapi_disabled "
    "email_enabled ftp_enabled notifications_enabled mqid build maxbars codepage ping_last "
    "community_balance retransmission company name language path data_path commondata_path",
)
SymbolInfo = namedtuple(
    "SymbolInfo",
    "custom chart_mode select visible session_deals session_buy_orders session_sell_orders volume "
    "volumehigh volumelow time digits spread spread_float ticks_bookdepth trade_calc_mode trade_mode "
    "start_time expiration_time trade_stops_level trade_freeze_level trade_exemode swap_mode "
    "swap_rollover3days margin_hedged_use_leg expiration_mode filling_mode order_mode order_gtc_mode "
    "option_mode option_right bid bidhigh bidlow ask askhigh asklow last lasthigh lastlow volume_real "
    "volumehigh_real volumelow_real option_strike point trade_tick_value trade_tick_value_profit "
    "trade_tick_value_loss trade_tick_size trade_contract_size trade_accrued_interest trade_face_value "
    "trade_liquidity_rate volume_min volume_max volume_step volume_limit swap_long swap_short "
    "margin_initial margin_maintenance session_volume session_turnover session_interest "
    "session_buy_orders_volume session_sell_orders_volume session_open session_close session_aw "
    "session_price_settlement session_price_limit_min session_price_limit_max margin_hedged "
    "price_change price_volatility price_theoretical price_greeks_delta price_greeks_theta "
    "price_greeks_gamma price_greeks_vega price_greeks_rho price_greeks_omega price_sensitivity basis "
    "category currency_base currency_profit currency_margin bank description exchange formula isin "
    "name page path",
)
Tick = namedtuple("Tick", "time bid ask last volume time_msc flags volume_real")
TradePosition = namedtuple(
    "TradePosition",
    "ticket time time_msc time_update time_update_msc type magic identifier reason volume price_open "
    "sl tp price_current swap profit symbol comment external_id",
)
TradeOrder = namedtuple(
    "TradeOrder",
    "ticket time_setup time_setup_msc time_done time_done_msc time_expiration type type_time "
    "type_filling state magic position_id position_by_id reason volume_initial volume_current "
    "price_open sl tp price_current price_stoplimit symbol comment external_id",
)
TradeDeal = namedtuple(
    "TradeDeal",
    "ticket order time time_msc type entry magic position_id reason volume price commission swap "
    "profit fee symbol comment external_id",
)
BookInfo = namedtuple("BookInfo", "type price volume volume_dbl")
TradeRequest = namedtuple(
    "TradeRequest",
    "action magic order symbol volume price stoplimit sl tp deviation type type_filling type_time "
    "expiration comment position position_by",
)
OrderCheckResult = namedtuple(
    "OrderCheckResult", "retcode balance equity profit margin margin_free margin_level comment request"
)
OrderSendResult = namedtuple(
    "OrderSendResult", "retcode deal order volume price bid ask comment request_id retcode_external request"
)

RATES_DTYPE = np.dtype(
    [("time", "<i8"), ("open", "<f8"), ("high", "<f8"), ("low", "<f8"), ("close", "<f8"),
     ("tick_volume", "<u8"), ("spread", "<i4"), ("real_volume", "<u8")]
)
TICKS_DTYPE = np.dtype(
    [("time", "<i8"), ("bid", "<f8"), ("ask", "<f8"), ("last", "<f8"), ("volume", "<u8"),
     ("time_msc", "<i8"), ("flags", "<u4"), ("volume_real", "<f8")]
)

# -- documented constants -----------------------------------------------------

TIMEFRAME_M1, TIMEFRAME_M5, TIMEFRAME_M15, TIMEFRAME_M30 = 1, 5, 15, 30
TIMEFRAME_H1, TIMEFRAME_H4, TIMEFRAME_D1 = 0x4000 | 1, 0x4000 | 4, 0x4000 | 24
TIMEFRAME_W1, TIMEFRAME_MN1 = 0x8000 | 1, 0xC000 | 1
TF_SECONDS = {
    TIMEFRAME_M1: 60, TIMEFRAME_M5: 300, TIMEFRAME_M15: 900, TIMEFRAME_M30: 1800,
    TIMEFRAME_H1: 3600, TIMEFRAME_H4: 14400, TIMEFRAME_D1: 86400, TIMEFRAME_W1: 604800,
    TIMEFRAME_MN1: 2592000,
}
ORDER_TYPE_BUY, ORDER_TYPE_SELL, ORDER_TYPE_BUY_LIMIT, ORDER_TYPE_SELL_LIMIT = 0, 1, 2, 3
ORDER_TYPE_BUY_STOP, ORDER_TYPE_SELL_STOP, ORDER_TYPE_BUY_STOP_LIMIT, ORDER_TYPE_SELL_STOP_LIMIT = 4, 5, 6, 7
ORDER_TYPE_CLOSE_BY = 8
TRADE_ACTION_DEAL, TRADE_ACTION_PENDING, TRADE_ACTION_SLTP = 1, 5, 6
TRADE_ACTION_MODIFY, TRADE_ACTION_REMOVE, TRADE_ACTION_CLOSE_BY = 7, 8, 10
ORDER_FILLING_FOK, ORDER_FILLING_IOC, ORDER_FILLING_RETURN, ORDER_FILLING_BOC = 0, 1, 2, 3
ORDER_TIME_GTC, ORDER_TIME_DAY, ORDER_TIME_SPECIFIED, ORDER_TIME_SPECIFIED_DAY = 0, 1, 2, 3
ORDER_STATE_STARTED, ORDER_STATE_PLACED, ORDER_STATE_CANCELED, ORDER_STATE_PARTIAL = 0, 1, 2, 3
ORDER_STATE_FILLED, ORDER_STATE_REJECTED, ORDER_STATE_EXPIRED = 4, 5, 6
POSITION_TYPE_BUY, POSITION_TYPE_SELL = 0, 1
DEAL_TYPE_BUY, DEAL_TYPE_SELL, DEAL_TYPE_BALANCE = 0, 1, 2
DEAL_ENTRY_IN, DEAL_ENTRY_OUT, DEAL_ENTRY_INOUT, DEAL_ENTRY_OUT_BY = 0, 1, 2, 3
DEAL_REASON_CLIENT, DEAL_REASON_EXPERT, DEAL_REASON_SL, DEAL_REASON_TP = 0, 3, 4, 5
ACCOUNT_TRADE_MODE_DEMO, ACCOUNT_TRADE_MODE_CONTEST, ACCOUNT_TRADE_MODE_REAL = 0, 1, 2
ACCOUNT_MARGIN_MODE_RETAIL_NETTING, ACCOUNT_MARGIN_MODE_EXCHANGE, ACCOUNT_MARGIN_MODE_RETAIL_HEDGING = 0, 1, 2
COPY_TICKS_ALL, COPY_TICKS_INFO, COPY_TICKS_TRADE = -1, 1, 2
TICK_FLAG_BID, TICK_FLAG_ASK = 2, 4
SYMBOL_FILLING_FOK, SYMBOL_FILLING_IOC = 1, 2
SYMBOL_TRADE_EXECUTION_REQUEST, SYMBOL_TRADE_EXECUTION_INSTANT = 0, 1
SYMBOL_TRADE_EXECUTION_MARKET, SYMBOL_TRADE_EXECUTION_EXCHANGE = 2, 3
SYMBOL_TRADE_MODE_DISABLED, SYMBOL_TRADE_MODE_FULL = 0, 4
SYMBOL_CALC_MODE_FOREX, SYMBOL_CALC_MODE_CFD = 0, 2
SYMBOL_SWAP_MODE_POINTS = 1
TRADE_RETCODE_REQUOTE, TRADE_RETCODE_REJECT, TRADE_RETCODE_PLACED = 10004, 10006, 10008
TRADE_RETCODE_DONE, TRADE_RETCODE_DONE_PARTIAL, TRADE_RETCODE_INVALID = 10009, 10010, 10013
TRADE_RETCODE_INVALID_VOLUME, TRADE_RETCODE_INVALID_PRICE, TRADE_RETCODE_INVALID_STOPS = 10014, 10015, 10016
TRADE_RETCODE_TRADE_DISABLED, TRADE_RETCODE_MARKET_CLOSED, TRADE_RETCODE_NO_MONEY = 10017, 10018, 10019
TRADE_RETCODE_NO_CHANGES, TRADE_RETCODE_CLIENT_DISABLES_AT = 10025, 10027
TRADE_RETCODE_INVALID_FILL, TRADE_RETCODE_INVALID_EXPIRATION = 10030, 10022
BOOK_TYPE_SELL, BOOK_TYPE_BUY, BOOK_TYPE_SELL_MARKET, BOOK_TYPE_BUY_MARKET = 1, 2, 3, 4
SYMBOL_EXPIRATION_GTC, SYMBOL_EXPIRATION_DAY, SYMBOL_EXPIRATION_SPECIFIED, SYMBOL_EXPIRATION_SPECIFIED_DAY = 1, 2, 4, 8
RES_S_OK, RES_E_FAIL, RES_E_INVALID_PARAMS, RES_E_NOT_FOUND = 1, -1, -2, -4
RES_E_INTERNAL_FAIL_CONNECT = -10004

_COMMENTS = {
    10004: "Requote", 10006: "Request rejected", 10008: "Request executed", 10009: "Request executed",
    10013: "Invalid request", 10014: "Invalid volume", 10015: "Invalid price", 10016: "Invalid stops",
    10017: "Trade disabled", 10018: "Market closed", 10019: "No money", 10025: "No changes",
    10027: "AutoTrading disabled by client", 10030: "Unsupported filling mode", 10022: "Invalid expiration",
}
_REQUEST_FIELDS = set(TradeRequest._fields)

SYMBOLS: Dict[str, Dict[str, Any]] = {
    # Market execution, IOC only: the bridge must pick ORDER_FILLING_IOC.
    "EURUSD": dict(base=1.085, digits=5, spread=12, exemode=SYMBOL_TRADE_EXECUTION_MARKET, filling=SYMBOL_FILLING_IOC,
                   stops=10, cb="EUR", cp="USD", cm="EUR", desc="Euro vs US Dollar", select=True),
    # Instant execution, FOK: requotes when the price moved beyond the deviation.
    "USDJPY": dict(base=150.0, digits=3, spread=15, exemode=SYMBOL_TRADE_EXECUTION_INSTANT, filling=SYMBOL_FILLING_FOK,
                   stops=20, cb="USD", cp="JPY", cm="USD", desc="US Dollar vs Japanese Yen", select=True),
    # Request execution without FOK/IOC bits (RETURN); not in Market Watch at first.
    "GBPUSD": dict(base=1.27, digits=5, spread=18, exemode=SYMBOL_TRADE_EXECUTION_REQUEST, filling=0,
                   stops=10, cb="GBP", cp="USD", cm="GBP", desc="Pound Sterling vs US Dollar", select=False),
}


def _secs(x: Any) -> int:
    if isinstance(x, datetime):
        if x.tzinfo is None:
            x = x.replace(tzinfo=timezone.utc)
        return int(x.timestamp())
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError("a date must be a datetime or seconds since 1970, not %r" % (x,))
    return int(x)


def _group_match(name: str, group: Optional[str]) -> bool:
    if not group:
        return True
    ok = False
    for cond in [c.strip() for c in group.split(",") if c.strip()]:
        if cond.startswith("!"):
            if fnmatch.fnmatchcase(name, cond[1:]):
                ok = False
        elif fnmatch.fnmatchcase(name, cond):
            ok = True
    return ok


class FakeMT5:
    """One fake terminal with a hedging demo account."""

    def __init__(self, clock: Any = None, balance: float = 10_000.0) -> None:
        for k, v in globals().items():
            if k.isupper() and isinstance(v, int):
                setattr(self, k, v)
        self.clock = clock or _time.time
        self._lock = threading.RLock()
        self._err: Tuple[int, str] = (RES_S_OK, "Success")
        self._initialized = False
        # Fault switches.
        self.disconnected = False
        self.market_closed = False
        self.no_money = False
        self.invalid_stops = False
        self.reject_next: List[int] = []
        self.delay = 0.0
        # Terminal and account switches.
        self.algo_trading = True
        self.trade_expert = True
        self.trade_mode = ACCOUNT_TRADE_MODE_DEMO
        # Observations.
        self.calls: List[str] = []
        self.sent: List[Dict[str, Any]] = []
        self.checked: List[Dict[str, Any]] = []
        # Account state.
        self.balance = balance
        self.selected = {n: s["select"] for n, s in SYMBOLS.items()}
        self.positions: Dict[int, Dict[str, Any]] = {}
        self.orders: Dict[int, Dict[str, Any]] = {}
        self.books: set = set()
        self.history_orders: List[Dict[str, Any]] = []
        self.deals: List[Dict[str, Any]] = []
        self._next_order = 1_000_001
        self._next_deal = 2_000_001
        self._request_id = 0
        t0 = int(self.clock()) - 86_400
        self.deals.append(dict(ticket=self._deal_ticket(), order=0, time=t0, time_msc=t0 * 1000, type=DEAL_TYPE_BALANCE,
                               entry=DEAL_ENTRY_IN, magic=0, position_id=0, reason=DEAL_REASON_CLIENT, volume=0.0,
                               price=0.0, commission=0.0, swap=0.0, profit=balance, fee=0.0, symbol="",
                               comment="initial deposit", external_id=""))

    # -- plumbing ---------------------------------------------------------

    def _call(self, name: str) -> bool:
        """Records a call; ``False`` (and last_error set) when the terminal is unreachable."""
        self.calls.append(name)
        if self.delay:
            _time.sleep(self.delay)
        if self.disconnected:
            self._err = (RES_E_INTERNAL_FAIL_CONNECT, "No IPC connection")
            return False
        self._err = (RES_S_OK, "Success")
        return True

    def _fail(self, code: int, text: str) -> None:
        self._err = (code, text)
        return None

    def _deal_ticket(self) -> int:
        t = self._next_deal
        self._next_deal += 1
        return t

    def _order_ticket(self) -> int:
        t = self._next_order
        self._next_order += 1
        return t

    # -- market --------------------------------------------------------------

    def _quote_at(self, name: str, t_ms: int) -> Tuple[float, float, int]:
        s = SYMBOLS[name]
        step = t_ms // 250
        mid = s["base"] * (1.0 + 0.0004 * math.sin(step / 9.0) + 0.0002 * math.sin(step / 23.0))
        point = 10.0 ** -s["digits"]
        bid = round(round(mid / point - s["spread"] / 2) * point, s["digits"])
        ask = round(bid + s["spread"] * point, s["digits"])
        return bid, ask, step * 250

    def _quote(self, name: str) -> Tuple[float, float, int]:
        return self._quote_at(name, int(self.clock() * 1000))

    def _usd(self, ccy: str, amount: float) -> float:
        if ccy == "USD":
            return amount
        if ccy == "JPY":
            return amount / self._quote("USDJPY")[0]
        if ccy == "EUR":
            return amount * self._quote("EURUSD")[0]
        if ccy == "GBP":
            return amount * self._quote("GBPUSD")[0]
        return amount

    def _margin(self, name: str, volume: float, price: float) -> float:
        s = SYMBOLS[name]
        notional = volume * 100_000.0
        if s["cm"] == "USD":
            return round(notional / 100.0, 2)
        return round(self._usd(s["cp"], notional * price) / 100.0, 2)

    def _pos_profit(self, p: Dict[str, Any]) -> Tuple[float, float]:
        bid, ask, _ = self._quote(p["symbol"])
        cur = bid if p["type"] == POSITION_TYPE_BUY else ask
        sign = 1.0 if p["type"] == POSITION_TYPE_BUY else -1.0
        profit = self._usd(SYMBOLS[p["symbol"]]["cp"], sign * (cur - p["price_open"]) * p["volume"] * 100_000.0)
        return cur, round(profit, 2)

    def _totals(self) -> Tuple[float, float, float]:
        profit = sum(self._pos_profit(p)[1] for p in self.positions.values())
        margin = sum(self._margin(p["symbol"], p["volume"], p["price_open"]) for p in self.positions.values())
        return round(profit, 2), round(self.balance + profit, 2), round(margin, 2)

    # -- connection ---------------------------------------------------------

    def initialize(self, *args: Any, **kwargs: Any) -> bool:
        """initialize(path, login=, password=, server=, timeout=, portable=)"""
        if len(args) > 1 or (args and not isinstance(args[0], str)):
            raise TypeError("initialize(): path is the only positional argument")
        unknown = set(kwargs) - {"login", "password", "server", "timeout", "portable"}
        if unknown:
            raise TypeError("initialize() got unexpected keyword arguments %s" % sorted(unknown))
        if not self._call("initialize"):
            return False
        self._initialized = True
        return True

    def login(self, login: int, password: Optional[str] = None, server: Optional[str] = None,
              timeout: Optional[int] = None) -> bool:
        return self._call("login")

    def shutdown(self) -> None:
        self.calls.append("shutdown")
        self._initialized = False

    def version(self) -> Optional[Tuple[int, int, str]]:
        if not self._call("version"):
            return None
        return (500, 4755, "20 Nov 2026")

    def last_error(self) -> Tuple[int, str]:
        return self._err

    def terminal_info(self) -> Optional[TerminalInfo]:
        self.calls.append("terminal_info")
        self._err = (RES_S_OK, "Success")
        return TerminalInfo(
            community_account=False, community_connection=False, connected=not self.disconnected,
            dlls_allowed=False, trade_allowed=self.algo_trading, tradeapi_disabled=False, email_enabled=False,
            ftp_enabled=False, notifications_enabled=False, mqid=False, build=4755, maxbars=100000, codepage=0,
            ping_last=35000, community_balance=0.0, retransmission=0.0, company="Fake Broker Ltd",
            name="MetaTrader 5", language="English", path="C:\\Program Files\\Fake MetaTrader 5",
            data_path="C:\\Users\\fake\\AppData\\Roaming\\MetaQuotes\\Terminal\\FAKE0001",
            commondata_path="C:\\Users\\fake\\AppData\\Roaming\\MetaQuotes\\Terminal\\Common",
        )

    def account_info(self) -> Optional[AccountInfo]:
        if not self._call("account_info"):
            return None
        with self._lock:
            profit, equity, margin = self._totals()
        return AccountInfo(
            login=5123456, trade_mode=self.trade_mode, leverage=100, limit_orders=200, margin_so_mode=0,
            trade_allowed=True, trade_expert=self.trade_expert, margin_mode=ACCOUNT_MARGIN_MODE_RETAIL_HEDGING,
            currency_digits=2, fifo_close=False, balance=round(self.balance, 2), credit=0.0, profit=profit,
            equity=equity, margin=margin, margin_free=round(equity - margin, 2),
            margin_level=round(equity / margin * 100.0, 2) if margin else 0.0, margin_so_call=50.0,
            margin_so_so=30.0, margin_initial=0.0, margin_maintenance=0.0, assets=0.0, liabilities=0.0,
            commission_blocked=0.0, name="Fake Demo", server="FakeBroker-Demo", currency="USD",
            company="Fake Broker Ltd",
        )

    # -- symbols -------------------------------------------------------------

    def symbols_total(self) -> int:
        return len(SYMBOLS) if self._call("symbols_total") else 0

    def _symbol_info(self, name: str) -> SymbolInfo:
        s = SYMBOLS[name]
        bid, ask, t_ms = self._quote(name)
        point = 10.0 ** -s["digits"]
        values: Dict[str, Any] = {f: 0 for f in SymbolInfo._fields}
        values.update(
            custom=False, select=self.selected[name], visible=self.selected[name], time=t_ms // 1000,
            digits=s["digits"], spread=s["spread"], spread_float=True, trade_calc_mode=SYMBOL_CALC_MODE_FOREX,
            trade_mode=SYMBOL_TRADE_MODE_FULL, trade_stops_level=s["stops"], trade_exemode=s["exemode"],
            swap_mode=SYMBOL_SWAP_MODE_POINTS, swap_rollover3days=3, margin_hedged_use_leg=False,
            expiration_mode=s.get("expiration", 15), filling_mode=s["filling"], order_mode=127, bid=bid, ask=ask, bidhigh=bid,
            bidlow=bid, askhigh=ask, asklow=ask, last=0.0, point=point,
            trade_tick_value=self._usd(s["cp"], point * 100_000.0), trade_tick_size=point,
            trade_tick_value_profit=self._usd(s["cp"], point * 100_000.0),
            trade_tick_value_loss=self._usd(s["cp"], point * 100_000.0), trade_contract_size=100_000.0,
            volume_min=0.01, volume_max=100.0, volume_step=0.01, volume_limit=0.0, swap_long=-6.5, swap_short=1.2,
            margin_hedged=50_000.0, basis="", category="", currency_base=s["cb"], currency_profit=s["cp"],
            currency_margin=s["cm"], bank="", description=s["desc"], exchange="", formula="", isin="", name=name,
            page="", path="Forex\\" + name,
        )
        return SymbolInfo(**values)

    def symbols_get(self, group: Optional[str] = None) -> Optional[Tuple[SymbolInfo, ...]]:
        if not self._call("symbols_get"):
            return None
        return tuple(self._symbol_info(n) for n in SYMBOLS if _group_match(n, group))

    def symbol_info(self, symbol: str, /) -> Optional[SymbolInfo]:
        if not self._call("symbol_info"):
            return None
        if symbol not in SYMBOLS or not self.selected[symbol]:
            return self._fail(RES_E_FAIL, "Terminal: Call failed")
        return self._symbol_info(symbol)

    def symbol_select(self, symbol: str, enable: Optional[bool] = None, /) -> bool:
        if not self._call("symbol_select"):
            return False
        if symbol not in SYMBOLS:
            self._fail(RES_E_FAIL, "Terminal: Call failed")
            return False
        self.selected[symbol] = bool(enable)
        return True

    def symbol_info_tick(self, symbol: str, /) -> Optional[Tick]:
        if not self._call("symbol_info_tick"):
            return None
        if symbol not in SYMBOLS or not self.selected[symbol]:
            return self._fail(RES_E_FAIL, "Terminal: Call failed")
        bid, ask, t_ms = self._quote(symbol)
        return Tick(time=t_ms // 1000, bid=bid, ask=ask, last=0.0, volume=0, time_msc=t_ms,
                    flags=TICK_FLAG_BID | TICK_FLAG_ASK, volume_real=0.0)

    # -- history of prices ----------------------------------------------------

    def _bar(self, name: str, open_s: int, seconds: int, now_ms: int) -> Tuple[Any, ...]:
        end_ms = min((open_s + seconds) * 1000 - 1, now_ms)
        samples = [self._quote_at(name, open_s * 1000 + int(i * (end_ms - open_s * 1000) / 4))[0] for i in range(5)]
        return (open_s, samples[0], max(samples), min(samples), samples[-1], 100 + (open_s // 60) % 50,
                SYMBOLS[name]["spread"], 0)

    def _rates(self, name: str, timeframe: int, opens: List[int]) -> np.ndarray:
        now_ms = int(self.clock() * 1000)
        seconds = TF_SECONDS[timeframe]
        return np.array([self._bar(name, o, seconds, now_ms) for o in opens], dtype=RATES_DTYPE)

    def _rates_args(self, name: str, symbol: Any, timeframe: Any) -> bool:
        if not self._call(name):
            return False
        if not isinstance(symbol, str) or timeframe not in TF_SECONDS:
            self._fail(RES_E_INVALID_PARAMS, "Invalid arguments")
            return False
        if symbol not in SYMBOLS:
            self._fail(RES_E_FAIL, "Terminal: Call failed")
            return False
        return True

    def copy_rates_from(self, symbol: str, timeframe: int, date_from: Any, count: int, /) -> Optional[np.ndarray]:
        if not self._rates_args("copy_rates_from", symbol, timeframe):
            return None
        sec = TF_SECONDS[timeframe]
        last = min(_secs(date_from), int(self.clock())) // sec * sec
        return self._rates(symbol, timeframe, [last - i * sec for i in range(int(count))][::-1])

    def copy_rates_from_pos(self, symbol: str, timeframe: int, start_pos: int, count: int, /) -> Optional[np.ndarray]:
        if not self._rates_args("copy_rates_from_pos", symbol, timeframe):
            return None
        sec = TF_SECONDS[timeframe]
        current = int(self.clock()) // sec * sec
        return self._rates(symbol, timeframe, [current - (start_pos + i) * sec for i in range(int(count))][::-1])

    def copy_rates_range(self, symbol: str, timeframe: int, date_from: Any, date_to: Any, /) -> Optional[np.ndarray]:
        if not self._rates_args("copy_rates_range", symbol, timeframe):
            return None
        sec = TF_SECONDS[timeframe]
        a, b = _secs(date_from), min(_secs(date_to), int(self.clock()))
        first = -(-a // sec) * sec
        opens = list(range(first, b + 1, sec))[-100_000:]
        return self._rates(symbol, timeframe, opens)

    def _ticks(self, symbol: str, from_ms: int, to_ms: int, count: Optional[int]) -> np.ndarray:
        to_ms = min(to_ms, int(self.clock() * 1000))
        out = []
        t = -(-from_ms // 250) * 250
        while t <= to_ms and (count is None or len(out) < count) and len(out) < 1_000_000:
            bid, ask, _ = self._quote_at(symbol, t)
            out.append((t // 1000, bid, ask, 0.0, 0, t, TICK_FLAG_BID | TICK_FLAG_ASK, 0.0))
            t += 250
        return np.array(out, dtype=TICKS_DTYPE)

    def copy_ticks_from(self, symbol: str, date_from: Any, count: int, flags: int, /) -> Optional[np.ndarray]:
        if not self._call("copy_ticks_from"):
            return None
        if symbol not in SYMBOLS:
            return self._fail(RES_E_FAIL, "Terminal: Call failed")
        return self._ticks(symbol, _secs(date_from) * 1000, 2 ** 62, int(count))

    def copy_ticks_range(self, symbol: str, date_from: Any, date_to: Any, flags: int, /) -> Optional[np.ndarray]:
        if not self._call("copy_ticks_range"):
            return None
        if symbol not in SYMBOLS:
            return self._fail(RES_E_FAIL, "Terminal: Call failed")
        return self._ticks(symbol, _secs(date_from) * 1000, _secs(date_to) * 1000 + 999, None)

    # -- positions, orders, history ------------------------------------------

    def _position_tuple(self, p: Dict[str, Any]) -> TradePosition:
        cur, profit = self._pos_profit(p)
        return TradePosition(ticket=p["ticket"], time=p["time_msc"] // 1000, time_msc=p["time_msc"],
                             time_update=p["time_update_msc"] // 1000, time_update_msc=p["time_update_msc"],
                             type=p["type"], magic=p["magic"], identifier=p["ticket"], reason=DEAL_REASON_EXPERT,
                             volume=p["volume"], price_open=p["price_open"], sl=p["sl"], tp=p["tp"],
                             price_current=cur, swap=0.0, profit=profit, symbol=p["symbol"], comment=p["comment"],
                             external_id="")

    @staticmethod
    def _filter(rows: List[Any], symbol: Optional[str], group: Optional[str], ticket: Optional[int]) -> List[Any]:
        out = []
        for r in rows:
            if symbol is not None and r["symbol"] != symbol:
                continue
            if group is not None and not _group_match(r["symbol"], group):
                continue
            if ticket is not None and r["ticket"] != ticket:
                continue
            out.append(r)
        return out

    def positions_total(self) -> int:
        return len(self.positions) if self._call("positions_total") else 0

    def positions_get(self, symbol: Optional[str] = None, group: Optional[str] = None,
                      ticket: Optional[int] = None) -> Optional[Tuple[TradePosition, ...]]:
        if not self._call("positions_get"):
            return None
        with self._lock:
            rows = self._filter(list(self.positions.values()), symbol, group, ticket)
            return tuple(self._position_tuple(p) for p in rows)

    def _order_tuple(self, o: Dict[str, Any]) -> TradeOrder:
        return TradeOrder(**{f: o.get(f, 0 if f not in ("symbol", "comment", "external_id") else "")
                             for f in TradeOrder._fields})

    def orders_total(self) -> int:
        return len(self.orders) if self._call("orders_total") else 0

    def orders_get(self, symbol: Optional[str] = None, group: Optional[str] = None,
                   ticket: Optional[int] = None) -> Optional[Tuple[TradeOrder, ...]]:
        if not self._call("orders_get"):
            return None
        with self._lock:
            rows = self._filter(list(self.orders.values()), symbol, group, ticket)
            out = []
            for o in rows:
                bid, ask, _ = self._quote(o["symbol"])
                out.append(self._order_tuple(dict(o, price_current=ask if o["type"] in (2, 4) else bid)))
            return tuple(out)

    def _history_select(self, name: str, rows: List[Dict[str, Any]], time_key: str, args: Tuple[Any, ...],
                        kwargs: Dict[str, Any], position_key: str) -> Optional[List[Dict[str, Any]]]:
        if not self._call(name):
            return None
        if "ticket" in kwargs:
            return [r for r in rows if r["ticket"] == kwargs["ticket"]]
        if "position" in kwargs:
            return [r for r in rows if r[position_key] == kwargs["position"]]
        if len(args) != 2 or set(kwargs) - {"group"}:
            self._fail(RES_E_INVALID_PARAMS, "Invalid arguments")
            return None
        a, b = _secs(args[0]), _secs(args[1])
        group = kwargs.get("group")
        return [r for r in rows if a <= r[time_key] <= b and (group is None or _group_match(r["symbol"], group))]

    def history_deals_total(self, date_from: Any, date_to: Any, /) -> int:
        rows = self._history_select("history_deals_total", self.deals, "time", (date_from, date_to), {}, "position_id")
        return len(rows or [])

    def history_deals_get(self, *args: Any, **kwargs: Any) -> Optional[Tuple[TradeDeal, ...]]:
        """history_deals_get(date_from, date_to, group=) | (ticket=) | (position=)"""
        with self._lock:
            rows = self._history_select("history_deals_get", self.deals, "time", args, kwargs, "position_id")
            return None if rows is None else tuple(TradeDeal(**r) for r in rows)

    def history_orders_total(self, date_from: Any, date_to: Any, /) -> int:
        rows = self._history_select("history_orders_total", self.history_orders, "time_done",
                                    (date_from, date_to), {}, "position_id")
        return len(rows or [])

    def history_orders_get(self, *args: Any, **kwargs: Any) -> Optional[Tuple[TradeOrder, ...]]:
        """history_orders_get(date_from, date_to, group=) | (ticket=) | (position=)"""
        with self._lock:
            rows = self._history_select("history_orders_get", self.history_orders, "time_done", args, kwargs,
                                        "position_id")
            return None if rows is None else tuple(self._order_tuple(r) for r in rows)

    def order_calc_margin(self, action: int, symbol: str, volume: float, price: float, /) -> Optional[float]:
        if not self._call("order_calc_margin"):
            return None
        return self._margin(symbol, volume, price)

    # -- trading -----------------------------------------------------------------

    def _request(self, request: Any) -> Optional[Dict[str, Any]]:
        if not isinstance(request, dict) or "action" not in request or set(request) - _REQUEST_FIELDS:
            return self._fail(RES_E_INVALID_PARAMS, "Invalid arguments")
        full = {f: 0 for f in _REQUEST_FIELDS}
        full.update(symbol="", comment="", volume=0.0, price=0.0, stoplimit=0.0, sl=0.0, tp=0.0)
        full.update(request)
        for f in ("volume", "price", "sl", "tp", "stoplimit"):
            if isinstance(full[f], bool) or not isinstance(full[f], (int, float)):
                return self._fail(RES_E_INVALID_PARAMS, "Invalid arguments")
        for f in ("action", "magic", "order", "deviation", "type", "type_filling", "type_time", "position"):
            if isinstance(full[f], bool) or not isinstance(full[f], int):
                return self._fail(RES_E_INVALID_PARAMS, "Invalid arguments")
        if not isinstance(full["symbol"], str) or not isinstance(full["comment"], str):
            return self._fail(RES_E_INVALID_PARAMS, "Invalid arguments")
        return full

    def _stops_ok(self, name: str, buy: bool, ref: float, sl: float, tp: float) -> bool:
        s = SYMBOLS[name]
        dist = s["stops"] * 10.0 ** -s["digits"]
        if buy:
            return (not sl or sl <= ref - dist) and (not tp or tp >= ref + dist)
        return (not sl or sl >= ref + dist) and (not tp or tp <= ref - dist)

    def _volume_ok(self, v: float) -> bool:
        return 0.01 - 1e-9 <= v <= 100.0 + 1e-9 and abs(round(v / 0.01) * 0.01 - v) < 1e-9

    def _filling_ok(self, name: str, filling: int) -> bool:
        s = SYMBOLS[name]
        if s["exemode"] == SYMBOL_TRADE_EXECUTION_MARKET:
            return (filling == ORDER_FILLING_FOK and s["filling"] & SYMBOL_FILLING_FOK != 0) or (
                filling == ORDER_FILLING_IOC and s["filling"] & SYMBOL_FILLING_IOC != 0)
        if filling == ORDER_FILLING_FOK:
            return s["filling"] & SYMBOL_FILLING_FOK != 0 or s["filling"] == 0
        if filling == ORDER_FILLING_IOC:
            return s["filling"] & SYMBOL_FILLING_IOC != 0 or s["filling"] == 0
        return filling == ORDER_FILLING_RETURN

    def _pending_ok(self, name: str, kind: int, price: float, stoplimit: float, r: Dict[str, Any]) -> int:
        """0 when a pending order of ``kind`` at ``price`` (and ``stoplimit``) with
        ``r``'s SL, TP, type_time and expiration is acceptable, else the retcode.
        Stop limits: the stop beyond the market, the limit back towards it
        (below the stop for a buy, above for a sell); SL/TP from the limit."""
        bid, ask, _ = self._quote(name)
        point = 10.0 ** -SYMBOLS[name]["digits"]
        dist = SYMBOLS[name]["stops"] * point
        ok = {2: price <= ask - dist, 3: price >= bid + dist, 4: price >= ask + dist, 5: price <= bid - dist,
              6: price >= ask + dist and 0.0 < stoplimit < price, 7: price <= bid - dist and stoplimit > price}
        if not ok[kind]:
            return TRADE_RETCODE_INVALID_PRICE
        buy = kind in (2, 4, 6)
        entry = stoplimit if kind in (6, 7) else price
        if self.invalid_stops and (r["sl"] or r["tp"]):
            return TRADE_RETCODE_INVALID_STOPS
        if not self._stops_ok(name, buy, entry, r["sl"], r["tp"]):
            return TRADE_RETCODE_INVALID_STOPS
        allowed = SYMBOLS[name].get("expiration", 15)
        if r["type_time"] not in (0, 1, 2, 3) or not allowed & (1 << r["type_time"]):
            return TRADE_RETCODE_INVALID_EXPIRATION
        if r["type_time"] in (ORDER_TIME_SPECIFIED, ORDER_TIME_SPECIFIED_DAY):
            now = int(self.clock())
            until = _secs(r["expiration"]) if r["expiration"] else 0
            if r["type_time"] == ORDER_TIME_SPECIFIED_DAY:
                until = until - until % 86400 + 86400
            if until <= now:
                return TRADE_RETCODE_INVALID_EXPIRATION
        return 0

    def _verdict(self, r: Dict[str, Any], sending: bool) -> Tuple[int, float]:
        """(retcode, margin needed); retcode 0 = acceptable."""
        if sending and (not self.algo_trading or not self.trade_expert):
            return TRADE_RETCODE_CLIENT_DISABLES_AT, 0.0
        if sending and self.reject_next:
            return self.reject_next.pop(0), 0.0
        action = r["action"]
        if action in (TRADE_ACTION_DEAL, TRADE_ACTION_PENDING, TRADE_ACTION_SLTP) and r["symbol"] not in SYMBOLS:
            return TRADE_RETCODE_INVALID, 0.0
        if self.market_closed:
            return TRADE_RETCODE_MARKET_CLOSED, 0.0
        if action == TRADE_ACTION_REMOVE:
            return (0 if r["order"] in self.orders else TRADE_RETCODE_INVALID), 0.0
        if action == TRADE_ACTION_MODIFY:
            o = self.orders.get(r["order"])
            if o is None:
                return TRADE_RETCODE_INVALID, 0.0
            code = self._pending_ok(o["symbol"], o["type"], float(r["price"]), float(r["stoplimit"]), r)
            if code:
                return code, 0.0
            new = (float(r["price"]), float(r["stoplimit"]), float(r["sl"]), float(r["tp"]), r["type_time"],
                   _secs(r["expiration"]) if r["expiration"] else 0)
            old = (o["price_open"], o["price_stoplimit"], o["sl"], o["tp"], o["type_time"], o["time_expiration"])
            return (TRADE_RETCODE_NO_CHANGES if new == old else 0), 0.0
        if action == TRADE_ACTION_CLOSE_BY:
            p, q = self.positions.get(r["position"]), self.positions.get(r["position_by"])
            if p is None or q is None or p["symbol"] != q["symbol"] or p["type"] == q["type"]:
                return TRADE_RETCODE_INVALID, 0.0
            return 0, 0.0
        name = r["symbol"]
        bid, ask, _ = self._quote(name)
        point = 10.0 ** -SYMBOLS[name]["digits"]
        if action == TRADE_ACTION_SLTP:
            p = self.positions.get(r["position"])
            if p is None or p["symbol"] != name:
                return TRADE_RETCODE_INVALID, 0.0
            buy = p["type"] == POSITION_TYPE_BUY
            if self.invalid_stops or not self._stops_ok(name, buy, bid if buy else ask, r["sl"], r["tp"]):
                return TRADE_RETCODE_INVALID_STOPS, 0.0
            if (p["sl"], p["tp"]) == (r["sl"], r["tp"]):
                return TRADE_RETCODE_NO_CHANGES, 0.0
            return 0, 0.0
        if r["type"] not in (0, 1, 2, 3, 4, 5, 6, 7):
            return TRADE_RETCODE_INVALID, 0.0
        if not self._volume_ok(float(r["volume"])):
            return TRADE_RETCODE_INVALID_VOLUME, 0.0
        buy = r["type"] in (0, 2, 4, 6)
        if action == TRADE_ACTION_DEAL:
            if r["type"] not in (0, 1):
                return TRADE_RETCODE_INVALID, 0.0
            if not self._filling_ok(name, r["type_filling"]):
                return TRADE_RETCODE_INVALID_FILL, 0.0
            market = ask if buy else bid
            if SYMBOLS[name]["exemode"] in (SYMBOL_TRADE_EXECUTION_INSTANT, SYMBOL_TRADE_EXECUTION_REQUEST):
                if abs(float(r["price"]) - market) > r["deviation"] * point + 1e-12:
                    return TRADE_RETCODE_REQUOTE, 0.0
            if r["position"]:
                p = self.positions.get(r["position"])
                if p is None or p["symbol"] != name or (p["type"] == POSITION_TYPE_BUY) == buy:
                    return TRADE_RETCODE_INVALID, 0.0
                if float(r["volume"]) > p["volume"] + 1e-9:
                    return TRADE_RETCODE_INVALID_VOLUME, 0.0
                return 0, 0.0
            ref = bid if buy else ask
            if self.invalid_stops and (r["sl"] or r["tp"]):
                return TRADE_RETCODE_INVALID_STOPS, 0.0
            if not self._stops_ok(name, buy, ref, r["sl"], r["tp"]):
                return TRADE_RETCODE_INVALID_STOPS, 0.0
            price = market
        elif action == TRADE_ACTION_PENDING:
            if r["type"] not in (2, 3, 4, 5, 6, 7):
                return TRADE_RETCODE_INVALID, 0.0
            price = float(r["price"])
            code = self._pending_ok(name, r["type"], price, float(r["stoplimit"]), r)
            if code:
                return code, 0.0
            if r["type"] in (6, 7):
                price = float(r["stoplimit"])
        else:
            return TRADE_RETCODE_INVALID, 0.0
        need = self._margin(name, float(r["volume"]), price)
        _, equity, margin = self._totals()
        if self.no_money or need > equity - margin:
            return TRADE_RETCODE_NO_MONEY, need
        return 0, need

    def order_check(self, request: Dict[str, Any], /) -> Optional[OrderCheckResult]:
        if not self._call("order_check"):
            return None
        with self._lock:
            r = self._request(request)
            if r is None:
                return None
            self.checked.append(dict(request))
            code, need = self._verdict(r, sending=False)
            profit, equity, margin = self._totals()
            if code:
                return OrderCheckResult(retcode=code, balance=0.0, equity=0.0, profit=0.0, margin=0.0,
                                        margin_free=0.0, margin_level=0.0, comment=_COMMENTS.get(code, "Rejected"),
                                        request=TradeRequest(**r))
            total = margin + need
            return OrderCheckResult(retcode=0, balance=round(self.balance, 2), equity=equity, profit=profit,
                                    margin=need, margin_free=round(equity - total, 2),
                                    margin_level=round(equity / total * 100.0, 2) if total else 0.0, comment="Done",
                                    request=TradeRequest(**r))

    def order_send(self, request: Dict[str, Any], /) -> Optional[OrderSendResult]:
        if not self._call("order_send"):
            return None
        with self._lock:
            r = self._request(request)
            if r is None:
                return None
            self.sent.append(dict(request))
            self._request_id += 1
            code, _ = self._verdict(r, sending=True)
            bid, ask, _ = self._quote(r["symbol"]) if r["symbol"] in SYMBOLS else (0.0, 0.0, 0)

            def result(retcode: int, deal: int = 0, order: int = 0, volume: float = 0.0, price: float = 0.0,
                       comment: Optional[str] = None) -> OrderSendResult:
                return OrderSendResult(retcode=retcode, deal=deal, order=order, volume=volume, price=price, bid=bid,
                                       ask=ask, comment=comment or _COMMENTS.get(retcode, "Rejected"),
                                       request_id=self._request_id, retcode_external=0, request=TradeRequest(**r))

            if code:
                return result(code)
            return self._execute(r, result)

    def _close_by(self, r: Dict[str, Any], result: Any, now_ms: int) -> OrderSendResult:
        """Both positions lose the smaller volume, each at the opening price of ``position_by``."""
        p, q = self.positions[r["position"]], self.positions[r["position_by"]]
        volume = round(min(p["volume"], q["volume"]), 2)
        price = q["price_open"]
        ticket = self._order_ticket()
        first = 0
        for pos in (p, q):
            sign = 1.0 if pos["type"] == POSITION_TYPE_BUY else -1.0
            cp = SYMBOLS[pos["symbol"]]["cp"]
            profit = round(self._usd(cp, sign * (price - pos["price_open"]) * volume * 100_000.0), 2)
            self.balance += profit
            deal = dict(ticket=self._deal_ticket(), order=ticket, time=now_ms // 1000, time_msc=now_ms,
                        type=DEAL_TYPE_SELL if pos["type"] == POSITION_TYPE_BUY else DEAL_TYPE_BUY,
                        entry=DEAL_ENTRY_OUT_BY, magic=r["magic"], reason=DEAL_REASON_EXPERT, position_id=pos["ticket"],
                        volume=volume, price=price, commission=0.0, swap=0.0, fee=0.0, profit=profit,
                        symbol=pos["symbol"], comment="", external_id="")
            self.deals.append(deal)
            first = first or deal["ticket"]
            pos["volume"] = round(pos["volume"] - volume, 2)
            if pos["volume"] <= 1e-9:
                del self.positions[pos["ticket"]]
        # The history keeps the close-by as an order of its own type (never pending).
        self.history_orders.append(dict(
            ticket=ticket, time_setup=now_ms // 1000, time_setup_msc=now_ms, time_done=now_ms // 1000,
            time_done_msc=now_ms, time_expiration=0, type=ORDER_TYPE_CLOSE_BY, type_time=ORDER_TIME_GTC,
            type_filling=ORDER_FILLING_FOK, state=ORDER_STATE_FILLED, magic=r["magic"], position_id=p["ticket"],
            position_by_id=q["ticket"], reason=DEAL_REASON_EXPERT, volume_initial=volume, volume_current=0.0,
            price_open=price, sl=0.0, tp=0.0, price_current=price, price_stoplimit=0.0, symbol=p["symbol"],
            comment="close #%d by #%d" % (p["ticket"], q["ticket"]), external_id=""))
        return result(TRADE_RETCODE_DONE, deal=first, order=ticket, volume=volume, price=price)

    # -- depth of market (market_book_add / market_book_get / market_book_release) --

    def market_book_add(self, symbol: str, /) -> bool:
        if not self._call("market_book_add"):
            return False
        if symbol not in SYMBOLS:
            self._fail(RES_E_NOT_FOUND, "Terminal: Not found")
            return False
        self.books.add(symbol)
        return True

    def market_book_release(self, symbol: str, /) -> bool:
        if not self._call("market_book_release"):
            return False
        if symbol not in self.books:
            self._fail(RES_E_FAIL, "Terminal: Call failed")
            return False
        self.books.discard(symbol)
        return True

    def market_book_get(self, symbol: str, /) -> Optional[Tuple[BookInfo, ...]]:
        """Three offers and three bids, one point apart, as MT5 lists them (highest price first)."""
        if not self._call("market_book_get"):
            return None
        if symbol not in self.books:
            return self._fail(RES_E_FAIL, "Terminal: Call failed")
        bid, ask, _ = self._quote(symbol)
        point = 10.0 ** -SYMBOLS[symbol]["digits"]
        digits = SYMBOLS[symbol]["digits"]
        sells = [BookInfo(BOOK_TYPE_SELL, round(ask + i * point, digits), 10 * (i + 1), 10.0 * (i + 1))
                 for i in reversed(range(3))]
        buys = [BookInfo(BOOK_TYPE_BUY, round(bid - i * point, digits), 5 * (i + 1), 5.0 * (i + 1)) for i in range(3)]
        return tuple(sells + buys)

    def _execute(self, r: Dict[str, Any], result: Any) -> OrderSendResult:
        now_ms = int(self.clock() * 1000)
        action = r["action"]
        if action == TRADE_ACTION_SLTP:
            p = self.positions[r["position"]]
            p.update(sl=float(r["sl"]), tp=float(r["tp"]), time_update_msc=now_ms)
            return result(TRADE_RETCODE_DONE)
        if action == TRADE_ACTION_MODIFY:
            o = self.orders[r["order"]]
            o.update(price_open=float(r["price"]), price_stoplimit=float(r["stoplimit"]), sl=float(r["sl"]),
                     tp=float(r["tp"]), type_time=r["type_time"],
                     time_expiration=_secs(r["expiration"]) if r["expiration"] else 0)
            return result(TRADE_RETCODE_DONE, order=o["ticket"], volume=o["volume_current"], price=o["price_open"])
        if action == TRADE_ACTION_CLOSE_BY:
            return self._close_by(r, result, now_ms)
        if action == TRADE_ACTION_REMOVE:
            o = self.orders.pop(r["order"])
            self.history_orders.append(dict(o, state=ORDER_STATE_CANCELED, time_done=now_ms // 1000,
                                            time_done_msc=now_ms, volume_current=o["volume_initial"]))
            return result(TRADE_RETCODE_DONE, order=o["ticket"])
        name = r["symbol"]
        bid, ask, _ = self._quote(name)
        buy = r["type"] in (0, 2, 4, 6)
        ticket = self._order_ticket()
        volume = float(r["volume"])
        order = dict(ticket=ticket, time_setup=now_ms // 1000, time_setup_msc=now_ms, time_done=0, time_done_msc=0,
                     time_expiration=0, type=r["type"], type_time=r["type_time"], type_filling=r["type_filling"],
                     state=ORDER_STATE_PLACED, magic=r["magic"], position_id=0, position_by_id=0,
                     reason=DEAL_REASON_EXPERT, volume_initial=volume, volume_current=volume,
                     price_open=float(r["price"]), sl=float(r["sl"]), tp=float(r["tp"]), price_current=0.0,
                     price_stoplimit=float(r["stoplimit"]), symbol=name, comment=r["comment"], external_id="")
        if action == TRADE_ACTION_PENDING and r["type_time"] in (ORDER_TIME_SPECIFIED, ORDER_TIME_SPECIFIED_DAY):
            order["time_expiration"] = _secs(r["expiration"])
        if action == TRADE_ACTION_PENDING:
            self.orders[ticket] = order
            return result(TRADE_RETCODE_PLACED, order=ticket, volume=volume, price=float(r["price"]))
        price = ask if buy else bid
        deal = dict(ticket=self._deal_ticket(), order=ticket, time=now_ms // 1000, time_msc=now_ms,
                    type=DEAL_TYPE_BUY if buy else DEAL_TYPE_SELL, magic=r["magic"], reason=DEAL_REASON_EXPERT,
                    volume=volume, price=price, commission=0.0, swap=0.0, fee=0.0, symbol=name,
                    comment=r["comment"], external_id="")
        if r["position"]:
            p = self.positions[r["position"]]
            sign = 1.0 if p["type"] == POSITION_TYPE_BUY else -1.0
            profit = round(self._usd(SYMBOLS[name]["cp"], sign * (price - p["price_open"]) * volume * 100_000.0), 2)
            self.balance += profit
            p["volume"] = round(p["volume"] - volume, 2)
            if p["volume"] <= 1e-9:
                del self.positions[r["position"]]
            deal.update(entry=DEAL_ENTRY_OUT, position_id=r["position"], profit=profit)
        else:
            self.positions[ticket] = dict(ticket=ticket, time_msc=now_ms, time_update_msc=now_ms,
                                          type=POSITION_TYPE_BUY if buy else POSITION_TYPE_SELL, magic=r["magic"],
                                          volume=volume, price_open=price, sl=float(r["sl"]), tp=float(r["tp"]),
                                          symbol=name, comment=r["comment"])
            deal.update(entry=DEAL_ENTRY_IN, position_id=ticket, profit=0.0)
        self.deals.append(deal)
        self.history_orders.append(dict(order, state=ORDER_STATE_FILLED, time_done=now_ms // 1000,
                                        time_done_msc=now_ms, volume_current=0.0, position_id=deal["position_id"],
                                        price_current=price))
        return result(TRADE_RETCODE_DONE, deal=deal["ticket"], order=ticket, volume=volume, price=price)


# -- the module as an API object (``--mt5-module fake_mt5``) -------------------

_default = FakeMT5()


def __getattr__(name: str) -> Any:
    return getattr(_default, name)


def initialize(*args: Any, **kwargs: Any) -> bool:
    return _default.initialize(*args, **kwargs)


def last_error() -> Tuple[int, str]:
    return _default.last_error()
