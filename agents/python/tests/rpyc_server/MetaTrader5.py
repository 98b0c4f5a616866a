"""``MetaTrader5`` as the tests' RPyC classic server imports it: the fake
terminal of ``fake_mt5.py``, made as unfriendly as the real package.

The server is started with ``PYTHONPATH=tests/rpyc_server:tests`` so that
``import MetaTrader5`` there resolves to this module, never on the test's side
(the test asserts the bridge's process has no ``MetaTrader5``). Like the real
package (a C extension):

- records are what the package's ``_core`` builds: C struct sequences
  (``PyStructSequence``: a tuple subclass with one attribute per field and an
  ``_asdict()`` method, **no** ``_fields``), modelled here by tuple
  subclasses of the same shape, whose classes live in a module
  ``MetaTrader5`` the Linux side cannot import (so pickling one to the other
  side fails); arrays are numpy structured arrays with the documented dtypes
  (``copy_rates_*``, ``copy_ticks_*``);
- ``None`` on failure with ``last_error()`` giving ``(code, message)``;
- functions refuse anything that is not a builtin value: an RPyC proxy
  (netref) of the caller's ``dict`` is a ``TypeError``, as it is for the
  package's C functions.

``_reset()`` gives a fresh fake terminal; ``_default()`` is the current one
(for the tests to set fault switches and read what was sent).
"""

from __future__ import annotations

import datetime as _dt
import operator
from typing import Any, Dict

import fake_mt5 as _f

__version__ = "5.0.4755+fake"

for _k in dir(_f):
    if _k.isupper() and type(getattr(_f, _k)) is int:
        globals()[_k] = getattr(_f, _k)

def _structseq(nt: Any) -> Any:
    """A struct-sequence-like record type with the fields of the named tuple ``nt``."""
    names = tuple(nt._fields)

    def _asdict(self: Any) -> Dict[str, Any]:
        return dict(zip(names, self))

    def __repr__(self: Any) -> str:
        return "%s(%s)" % (nt.__name__, ", ".join("%s=%r" % kv for kv in zip(names, self)))

    ns: Dict[str, Any] = {"__slots__": (), "__module__": "MetaTrader5", "__match_args__": names,
                          "n_fields": len(names), "n_sequence_fields": len(names), "n_unnamed_fields": 0,
                          "_asdict": _asdict, "__repr__": __repr__}
    for i, n in enumerate(names):
        ns[n] = property(operator.itemgetter(i))
    return type(nt.__name__, (tuple,), ns)


_RECORDS = {}
for _nt in (_f.AccountInfo, _f.TerminalInfo, _f.SymbolInfo, _f.Tick, _f.TradePosition, _f.TradeOrder,
            _f.TradeDeal, _f.TradeRequest, _f.OrderCheckResult, _f.OrderSendResult, _f.BookInfo):
    _RECORDS[_nt] = globals()[_nt.__name__] = _structseq(_nt)


def _native(x: Any) -> Any:
    """The fake's named tuples → the package's record types (tuples of them stay tuples)."""
    cls = _RECORDS.get(type(x))
    if cls is not None:
        return cls(_native(v) for v in x)
    if type(x) is tuple:
        return tuple(_native(v) for v in x)
    return x

_SIMPLE = (type(None), bool, int, float, str, _dt.datetime)


def _check(name: str, value: Any) -> None:
    if type(value) is dict:
        for k, v in value.items():
            if type(k) is not str:
                raise TypeError("%s(): request keys must be str, not %s" % (name, type(k).__name__))
            _check(name, v)
        return
    if type(value) not in _SIMPLE:
        raise TypeError("%s(): unsupported argument of type %s.%s" % (name, type(value).__module__,
                                                                       type(value).__name__))


def _strict(name: str) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        for v in list(args) + list(kwargs.values()):
            _check(name, v)
        return _native(getattr(_f._default, name)(*args, **kwargs))

    call.__name__ = call.__qualname__ = name
    return call


for _name in ("initialize", "login", "shutdown", "version", "last_error", "terminal_info", "account_info",
              "symbols_total", "symbols_get", "symbol_info", "symbol_select", "symbol_info_tick",
              "copy_rates_from", "copy_rates_from_pos", "copy_rates_range", "copy_ticks_from", "copy_ticks_range",
              "positions_total", "positions_get", "orders_total", "orders_get", "history_deals_total",
              "history_deals_get", "history_orders_total", "history_orders_get", "order_calc_margin",
              "order_check", "order_send", "market_book_add", "market_book_get", "market_book_release"):
    globals()[_name] = _strict(_name)


def _reset() -> None:
    """A fresh fake terminal."""
    _f._default = _f.FakeMT5()


def _default() -> Any:
    return _f._default
