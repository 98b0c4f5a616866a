"""The MetaTrader5 API of a terminal under Wine, through an RPyC classic server.

On Linux the terminal runs under Wine, and only a *Windows* Python can import
the ``MetaTrader5`` package. That Python runs RPyC's classic server
(``python -m rpyc.cli.rpyc_classic --host 127.0.0.1 -p 18812``, the same
server every mt5linux release starts); :class:`RpycApi` connects to it with
``rpyc`` directly and offers the module's API: the same functions, the same
constants.

Through RPyC every object that is not an immutable builtin arrives as a proxy
(a *netref*): a named tuple, a numpy array, and every attribute read on them
is one more network round trip. So the bridge never touches a netref: on
connecting it installs two small functions in the server's namespace
(``HELPER``), and each API call is **one** round trip that runs the function
on the Windows side and returns its result converted there to nested tuples
of builtins (which RPyC sends by value): the package's records (C struct
sequences with ``_asdict()``, named-tuple-like) as
``(typename, fields, values)``, numpy structured arrays as their raw bytes
with the dtype's layout (copied once, never element by element). Here they
become named tuples again and numpy structured arrays (or, without numpy,
lists of :class:`Record`). Arguments go the other way the same way: a request
``dict`` is rebuilt as a real ``dict`` on the server, because the
package's C functions refuse proxies.

Link failures never raise into the bridge: the call returns ``None`` and
``last_error()`` answers a code of the package's IPC range, so the bridge
treats a lost RPyC link as a terminal outage (commands answer ``INTERNAL``,
the poller calls ``initialize()`` again with backoff, and ``initialize()``
first reconnects the link):

- ``(-10004, "No IPC connection ...")``: the link is down, nothing was sent;
- ``(-10002, "IPC recv failed ...")``: the link broke during the call (an
  ``order_send`` may have reached the terminal: outcome unknown);
- ``(-10005, "IPC timeout ...")``: no answer within the timeout (the link is
  dropped, the outcome is unknown as well).
"""

from __future__ import annotations

import collections
import logging
import struct
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

log = logging.getLogger("tradeterm_agent.rpyc")

#: The rpyc version the ``linux`` extra pins; the Windows side must run the same.
RPYC_VERSION = "6.0.2"
DEFAULT_PORT = 18812
#: How to start the server in the Windows Python (rpyc 6's ``rpyc.cli.rpyc_classic``
#: has no ``__main__`` guard, so ``python -m rpyc.cli.rpyc_classic`` does nothing;
#: the console script ``Scripts\rpyc_classic.exe`` is the same as this).
SERVER_COMMAND = 'python -c "from rpyc.cli.rpyc_classic import main; main()" --host 127.0.0.1 -p %d'

RES_E_INTERNAL_FAIL_RECEIVE = -10002
RES_E_INTERNAL_FAIL_CONNECT = -10004
RES_E_INTERNAL_FAIL_TIMEOUT = -10005

#: Executed once per connection in the server's namespace (a Windows Python
#: 3.8 or newer with MetaTrader5 and numpy). Keep it self-contained.
HELPER = r'''
import MetaTrader5 as _tt_mt5

def _tt_fields(x):
    """(names, values) of a record type: the package's are C struct sequences
    with _asdict() (no _fields); namedtuples have _fields."""
    t = type(x)
    names = getattr(x, "_fields", None)
    if names is not None:
        return tuple(names), tuple(x)
    if hasattr(x, "_asdict"):
        d = x._asdict()
        return tuple(d), tuple(d.values())
    if hasattr(t, "n_sequence_fields"):
        names = getattr(t, "__match_args__", None)
        if names is None:
            names = tuple(k for k, v in vars(t).items() if type(v).__name__ == "member_descriptor")
        names = tuple(names)[: t.n_sequence_fields]
        return names, tuple(getattr(x, n) for n in names)
    return None, None

def _tt_out(x):
    t = type(x)
    if x is None or t in (bool, int, float, str, bytes):
        return x
    if isinstance(x, tuple) and t is not tuple:
        names, values = _tt_fields(x)
        if names is not None:
            return ("T", t.__name__, tuple(str(n) for n in names), tuple(_tt_out(v) for v in values))
    if isinstance(x, (tuple, list)):
        return ("S", tuple(_tt_out(v) for v in x))
    if isinstance(x, dict):
        return ("D", tuple((str(k), _tt_out(v)) for k, v in x.items()))
    if t.__module__ == "numpy" and t.__name__ == "ndarray":
        d = x.dtype
        if d.names and all(d.fields[n][0].subdtype is None for n in d.names):
            layout = tuple((n, d.fields[n][0].str, d.fields[n][1]) for n in d.names)
            return ("A", layout, d.itemsize, int(x.shape[0]) if x.ndim else 1, x.tobytes())
        return ("S", tuple(_tt_out(v) for v in x.tolist()))
    if t.__module__ == "numpy" and hasattr(x, "item"):
        return _tt_out(x.item())
    if hasattr(x, "_asdict"):
        d = x._asdict()
        return ("T", t.__name__, tuple(str(n) for n in d), tuple(_tt_out(v) for v in d.values()))
    return ("R", repr(x))

def _tt_in(x):
    if type(x) is tuple and x and x[0] == "D":
        return {k: _tt_in(v) for k, v in x[1]}
    if type(x) is tuple and x and x[0] == "S":
        return tuple(_tt_in(v) for v in x[1])
    return x

def _tradeterm_call(name, args, kwargs):
    fn = getattr(_tt_mt5, name)
    return _tt_out(fn(*[_tt_in(a) for a in args], **{k: _tt_in(v) for k, v in kwargs}))

def _tradeterm_describe():
    import sys
    consts = []
    for k in dir(_tt_mt5):
        if k.isupper():
            v = getattr(_tt_mt5, k, None)
            if type(v) is int:
                consts.append((k, v))
    return (tuple(consts), str(getattr(_tt_mt5, "__version__", "")), sys.version.split()[0], sys.platform,
            str(getattr(_tt_mt5, "__file__", "")))
'''

# struct codes of the numpy scalar kinds the package's dtypes use.
_STRUCT = {"i1": "b", "u1": "B", "i2": "h", "u2": "H", "i4": "i", "u4": "I", "i8": "q", "u8": "Q",
           "f4": "f", "f8": "d", "b1": "?"}

try:  # numpy is optional on the Linux side: without it arrays become lists of Record
    import numpy as _np  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - exercised by forcing USE_NUMPY = False
    _np = None
USE_NUMPY = _np is not None


class Record(tuple):
    """One row of a structured array without numpy: ``r["time"]``, ``r.time`` or ``r[0]``."""

    _names: Tuple[str, ...] = ()

    def __getitem__(self, key: Any) -> Any:  # type: ignore[override]
        if isinstance(key, str):
            try:
                return tuple.__getitem__(self, self._names.index(key))
            except ValueError:
                raise KeyError(key) from None
        return tuple.__getitem__(self, key)

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


_tuple_types: Dict[Tuple[str, Tuple[str, ...]], Any] = {}
_record_types: Dict[Tuple[str, ...], Any] = {}


def _named_tuple(typename: str, fields: Tuple[str, ...]) -> Any:
    key = (typename, fields)
    cls = _tuple_types.get(key)
    if cls is None:
        name = typename if typename.isidentifier() else "Result"
        cls = _tuple_types[key] = collections.namedtuple(name, fields, rename=True)  # type: ignore[misc]
    return cls


def _array(layout: Tuple[Tuple[str, str, int], ...], itemsize: int, count: int, data: bytes) -> Any:
    names = tuple(n for n, _, _ in layout)
    if USE_NUMPY:
        dtype = _np.dtype({"names": list(names), "formats": [f for _, f, _ in layout],
                           "offsets": [o for _, _, o in layout], "itemsize": itemsize})
        return _np.frombuffer(data, dtype=dtype, count=count)
    fmt, pos = "", 0
    order = "<"
    for n, f, off in sorted(layout, key=lambda e: e[2]):
        code = _STRUCT.get(f[1:])
        if code is None:
            raise TypeError("field %s of type %s needs numpy on this side" % (n, f))
        if f[0] == ">":
            order = ">"
        fmt += "%dx%s" % (off - pos, code) if off > pos else code
        pos = off + struct.calcsize("=" + code)
    if itemsize > pos:
        fmt += "%dx" % (itemsize - pos)
    by_offset = [n for n, _, _ in sorted(layout, key=lambda e: e[2])]
    index = [by_offset.index(n) for n in names]
    cls = _record_types.get(names)
    if cls is None:
        cls = _record_types[names] = type("Record", (Record,), {"_names": names, "__slots__": ()})
    return [cls(v[i] for i in index) for v in struct.iter_unpack(order + fmt, data[: itemsize * count])]


def decode(x: Any) -> Any:
    """A value encoded by the server's ``_tt_out`` → named tuples, tuples, dicts, arrays."""
    if type(x) is not tuple:
        return x
    tag = x[0]
    if tag == "T":
        return _named_tuple(x[1], x[2])(*[decode(v) for v in x[3]])
    if tag == "S":
        return tuple(decode(v) for v in x[1])
    if tag == "D":
        return {k: decode(v) for k, v in x[1]}
    if tag == "A":
        return _array(x[1], x[2], x[3], x[4])
    if tag == "R":
        return x[1]
    raise ValueError("unexpected value from the RPyC server: %r" % (x,))


def encode(x: Any) -> Any:
    """An argument → builtins RPyC sends by value (never a proxy of a local object)."""
    if x is None or type(x) in (bool, int, float, str, bytes):
        return x
    if isinstance(x, bool):
        return bool(x)
    if isinstance(x, int):
        return int(x)
    if isinstance(x, float):
        return float(x)
    if isinstance(x, str):
        return str(x)
    if isinstance(x, dict):
        return ("D", tuple((str(k), encode(v)) for k, v in x.items()))
    if isinstance(x, (tuple, list)):
        return ("S", tuple(encode(v) for v in x))
    if type(x).__module__ == "numpy" and hasattr(x, "item"):
        return encode(x.item())
    raise TypeError("cannot send %s over RPyC (only numbers, strings, tuples, lists and dicts)" % type(x).__name__)


def parse_address(text: str, option: str = "--rpyc") -> Tuple[str, int]:
    """``HOST:PORT`` (``[::1]:PORT`` for IPv6) → ``(host, port)``."""
    host, _, port = text.strip().rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError("%s expects HOST:PORT (e.g. 127.0.0.1:%d), got %r" % (option, DEFAULT_PORT, text))
    return host, int(port)


class LinkDown(Exception):
    """The RPyC link is down (raised by :meth:`RpycApi.connect`)."""


class RpycApi:
    """The ``MetaTrader5`` module of an RPyC classic server, as a local object.

    Functions (``api.account_info()``) are one round trip each; constants
    (``api.ORDER_TYPE_BUY``) are read once per connection and answered
    locally. Thread-safe (calls are serialised)."""

    def __init__(self, host: str, port: int, timeout: float = 90.0, connect_timeout: float = 5.0) -> None:
        try:
            import rpyc  # noqa: F401  (the clear error comes first)
            from rpyc.core.service import ClassicClient
            from rpyc.core.stream import SocketStream
            from rpyc.utils.factory import connect_stream
        except ImportError as e:
            raise RuntimeError(
                "--rpyc needs the rpyc package (%s): pip install 'tradeterm-agent[linux]' (rpyc==%s, "
                "the same version as the server under Wine)" % (e, RPYC_VERSION)
            ) from e
        self._rpyc = rpyc
        self._service = ClassicClient
        self._stream = SocketStream
        self._connect_stream = connect_stream
        self.host, self.port = host, port
        self.address = "%s:%d" % (host, port)
        self.timeout = float(timeout)
        self.connect_timeout = float(connect_timeout)
        self._lock = threading.RLock()
        self._conn: Any = None
        self._call: Optional[Callable[..., Any]] = None
        self._err: Optional[Tuple[int, str]] = None
        self._consts: Dict[str, int] = {}
        self._funcs: Dict[str, Callable[..., Any]] = {}
        #: What the server said about itself on the last connection.
        self.server: Dict[str, str] = {}
        #: Connections made (1 after the first).
        self.connections = 0
        #: Round trips made by API calls (for the benchmark and the tests).
        self.round_trips = 0

    # -- the link ----------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._conn is not None and not self._conn.closed

    def connect(self) -> None:
        """(Re)connects and installs the helper; raises :class:`LinkDown` with a
        message for the user when the server cannot be reached or used."""
        with self._lock:
            self._drop()
            try:
                stream = self._stream.connect(self.host, self.port, timeout=self.connect_timeout, keepalive=True)
            except OSError as e:
                raise LinkDown("RPyC server %s unreachable (%s)" % (self.address, e)) from e
            try:
                conn = self._connect_stream(stream, self._service, {"sync_request_timeout": self.timeout})
                conn.execute(HELPER)
                ns = conn.namespace
                call, describe = ns["_tradeterm_call"], ns["_tradeterm_describe"]
                consts, version, py, platform, path = describe()
            except Exception as e:
                try:
                    stream.close()
                except Exception:
                    pass
                first = (str(e).strip().splitlines() or [""])[0]
                if getattr(e, "_remote_tb", None) and isinstance(e, ImportError):
                    raise LinkDown("the Python of the RPyC server %s cannot import MetaTrader5 (%s): "
                                   "pip install MetaTrader5 in that (Windows) Python" % (self.address, first)) from e
                raise LinkDown("RPyC server %s did not answer as an rpyc %s classic server (%s: %s)"
                               % (self.address, RPYC_VERSION, type(e).__name__, first)) from e
            self._conn, self._call = conn, call
            self._consts = {str(k): int(v) for k, v in consts}
            self.server = {"MetaTrader5": version, "python": py, "platform": platform, "module": path}
            self._err = None
            self.connections += 1
            log.info("RPyC link to %s up: Python %s (%s), MetaTrader5 %s from %s, %d constants",
                     self.address, py, platform, version or "?", path or "?", len(self._consts))

    def _drop(self) -> None:
        conn, self._conn, self._call = self._conn, None, None
        if conn is not None:
            try:
                conn.close()
            except Exception:
                pass

    def close(self) -> None:
        """Closes the link (a later ``initialize()`` reconnects)."""
        with self._lock:
            self._drop()
            self._err = (RES_E_INTERNAL_FAIL_CONNECT, "No IPC connection: RPyC link to %s closed" % self.address)

    def _down(self, code: int, text: str) -> None:
        self._drop()
        self._err = (code, text)
        log.warning("RPyC link to %s lost: %s", self.address, text)

    def invoke(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """One API call: one round trip; ``None`` (and ``last_error()`` set) when the link fails."""
        eargs = tuple(encode(a) for a in args)
        ekw = tuple((k, encode(v)) for k, v in kwargs.items())
        with self._lock:
            if self._call is None or self._conn is None or self._conn.closed:
                if self._call is not None:
                    self._down(RES_E_INTERNAL_FAIL_CONNECT, "No IPC connection: RPyC link to %s closed" % self.address)
                if self._err is None:
                    self._err = (RES_E_INTERNAL_FAIL_CONNECT, "No IPC connection: RPyC link to %s down" % self.address)
                return None
            self.round_trips += 1
            try:
                out = self._call(name, eargs, ekw)
            except Exception as e:
                if getattr(e, "_remote_tb", None) is not None:
                    raise  # the package itself raised (bad arguments): as in process
                if isinstance(e, self._rpyc.AsyncResultTimeout):
                    self._down(RES_E_INTERNAL_FAIL_TIMEOUT, "IPC timeout: no answer from the RPyC server %s "
                               "to %s() within %.0f s" % (self.address, name, self.timeout))
                else:
                    self._down(RES_E_INTERNAL_FAIL_RECEIVE, "IPC recv failed: RPyC link to %s lost during %s() "
                               "(%s: %s)" % (self.address, name, type(e).__name__, e))
                return None
            self._err = None
        return decode(out)

    # -- the MetaTrader5 API ------------------------------------------------

    def initialize(self, *args: Any, **kwargs: Any) -> bool:
        """Reconnects the link when it is down, then ``initialize(...)`` on the server."""
        with self._lock:
            if not self.connected:
                try:
                    self.connect()
                except LinkDown as e:
                    self._err = (RES_E_INTERNAL_FAIL_CONNECT, "No IPC connection: %s" % e)
                    return False
            return bool(self.invoke("initialize", *args, **kwargs))

    def last_error(self) -> Tuple[int, str]:
        with self._lock:
            if self._err is not None:
                return self._err
            err = self.invoke("last_error")
            if err is None:
                assert self._err is not None
                return self._err
            return int(err[0]), str(err[1])

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name.isupper():
            try:
                return self._consts[name]
            except KeyError:
                raise AttributeError("the server's MetaTrader5 has no %s" % name) from None
        fn = self._funcs.get(name)
        if fn is None:
            def fn(*args: Any, **kwargs: Any) -> Any:
                return self.invoke(name, *args, **kwargs)
            fn.__name__ = name
            self._funcs[name] = fn
        return fn

    def __repr__(self) -> str:
        return "<RpycApi %s %s>" % (self.address, "up" if self.connected else "down")


def connect(address: str, option: str = "--rpyc", timeout: float = 90.0) -> RpycApi:
    """An :class:`RpycApi` connected to ``HOST:PORT``; ``RuntimeError`` with a
    message for the user when rpyc is missing or the server unreachable."""
    host, port = parse_address(address, option)
    api = RpycApi(host, port, timeout=timeout)
    try:
        api.connect()
    except LinkDown as e:
        raise RuntimeError(
            "%s; start the terminal, then the RPyC classic server in the Windows Python under Wine "
            "(%s), with rpyc==%s on both sides" % (e, SERVER_COMMAND % port, RPYC_VERSION)
        ) from e
    return api
