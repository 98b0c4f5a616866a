"""``tradeterm-agent``: command-line options and environment variables.

Every option has an environment variable (``TRADETERM_*``); the command line
wins. Secrets (the terminal key, the account password) are best given through
the environment: a command line is visible to other users of the machine.
Secrets are never logged.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any, List, Optional

from . import __version__
from .agent import Agent, Settings, agent_url
from .rpyc_link import RPYC_VERSION
from .terminal import load_api

log = logging.getLogger("tradeterm_agent")

TRUE = ("1", "true", "yes", "on")


def default_state_dir() -> Path:
    """``%LOCALAPPDATA%\\tradeterm-agent`` on Windows, else ``$XDG_STATE_HOME/tradeterm-agent``
    (``~/.local/state/tradeterm-agent``)."""
    if os.name == "nt" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "tradeterm-agent"
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "tradeterm-agent"


def _env(name: str) -> Optional[str]:
    v = os.environ.get(name)
    return v if v not in (None, "") else None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tradeterm-agent",
        description="Connects a MetaTrader 5 terminal to a tradeterm gateway (agent protocol v1).",
    )
    p.add_argument("--gateway", default=_env("TRADETERM_GATEWAY_URL"),
                   help="gateway URL, ws://HOST:PORT or wss://HOST:PORT (/agent/v1 is added) [TRADETERM_GATEWAY_URL]")
    p.add_argument("--terminal-key", default=None,
                   help="terminal key tt_term_...; prefer the environment variable TRADETERM_TERMINAL_KEY")
    p.add_argument("--allow-trading", action="store_true",
                   default=(_env("TRADETERM_ALLOW_TRADING") or "").lower() in TRUE,
                   help="allow live trade commands (default off) [TRADETERM_ALLOW_TRADING=true]")
    p.add_argument("--ca-file", default=_env("TRADETERM_CA_FILE"),
                   help="PEM file of the CA to trust for wss:// (a self-signed gateway) [TRADETERM_CA_FILE]")
    p.add_argument("--symbols", default=_env("TRADETERM_SYMBOLS") or "",
                   help="comma-separated symbols whose quotes are streamed from the start [TRADETERM_SYMBOLS]")
    p.add_argument("--poll-interval", type=float, default=float(_env("TRADETERM_POLL_INTERVAL") or 0.25),
                   help="seconds between polls of account, positions, orders and switches (default 0.25) "
                        "[TRADETERM_POLL_INTERVAL]")
    p.add_argument("--tick-interval", type=float, default=float(_env("TRADETERM_TICK_INTERVAL") or 0.1),
                   help="seconds between quote polls of the streamed symbols (default 0.1) [TRADETERM_TICK_INTERVAL]")
    p.add_argument("--state-dir", default=_env("TRADETERM_STATE_DIR"),
                   help="directory of the idempotency record (default: %s) [TRADETERM_STATE_DIR]" % default_state_dir())
    p.add_argument("--uid", default=_env("TRADETERM_UID"),
                   help="terminal uid sent in hello (default: a hash of the terminal's data path) [TRADETERM_UID]")
    p.add_argument("--deviation", type=int, default=int(_env("TRADETERM_DEVIATION") or 20),
                   help="default maximum slippage of market orders, points (default 20) [TRADETERM_DEVIATION]")
    p.add_argument("--server-time-offset", type=int, default=int(_env("TRADETERM_SERVER_TIME_OFFSET") or 0),
                   help="seconds the terminal's times are ahead of UTC (default 0: the package reports UTC) "
                        "[TRADETERM_SERVER_TIME_OFFSET]")
    p.add_argument("--backoff-cap", type=float, default=float(_env("TRADETERM_BACKOFF_CAP") or 10.0),
                   help="longest wait between reconnection attempts, seconds (default 10) [TRADETERM_BACKOFF_CAP]")
    g = p.add_argument_group("terminal")
    g.add_argument("--mt5-module", default=_env("TRADETERM_MT5_MODULE"),
                   help="module with the MetaTrader5 API to import (default MetaTrader5) [TRADETERM_MT5_MODULE]")
    g.add_argument("--rpyc", "--mt5linux", dest="rpyc", default=_env("TRADETERM_RPYC") or _env("TRADETERM_MT5LINUX"),
                   metavar="HOST:PORT",
                   help="use the MetaTrader5 module of an RPyC classic server (a Windows Python under Wine, "
                        "rpyc %s) instead of a local module; --mt5linux is an alias "
                        "[TRADETERM_RPYC, TRADETERM_MT5LINUX]" % RPYC_VERSION)
    g.add_argument("--rpyc-timeout", type=float, default=float(_env("TRADETERM_RPYC_TIMEOUT") or 90.0),
                   help="seconds one call through RPyC may take before the link is dropped (default 90) "
                        "[TRADETERM_RPYC_TIMEOUT]")
    g.add_argument("--terminal-path", default=_env("TRADETERM_MT5_PATH"),
                   help="path of terminal64.exe for initialize() [TRADETERM_MT5_PATH]")
    g.add_argument("--login", type=int, default=int(_env("TRADETERM_MT5_LOGIN") or 0) or None,
                   help="account number for initialize() [TRADETERM_MT5_LOGIN]")
    g.add_argument("--password", default=None,
                   help="account password for initialize(); prefer TRADETERM_MT5_PASSWORD")
    g.add_argument("--server", default=_env("TRADETERM_MT5_SERVER"),
                   help="trade server name for initialize() [TRADETERM_MT5_SERVER]")
    g.add_argument("--init-timeout-ms", type=int, default=int(_env("TRADETERM_MT5_TIMEOUT_MS") or 0) or None,
                   help="initialize() timeout, ms (package default 60000) [TRADETERM_MT5_TIMEOUT_MS]")
    p.add_argument("--log-level", default=_env("TRADETERM_LOG_LEVEL") or "INFO",
                   help="DEBUG, INFO, WARNING, ERROR [TRADETERM_LOG_LEVEL]")
    p.add_argument("--version", action="version", version="%(prog)s " + __version__)
    return p


def settings_from(args: argparse.Namespace) -> Settings:
    """Validated settings; raises ``ValueError`` with a message for the user."""
    if not args.gateway:
        raise ValueError("the gateway URL is required: --gateway or TRADETERM_GATEWAY_URL")
    agent_url(args.gateway)
    key = args.terminal_key or _env("TRADETERM_TERMINAL_KEY")
    if not key:
        raise ValueError("the terminal key is required: set TRADETERM_TERMINAL_KEY (or --terminal-key)")
    if args.terminal_key:
        log.warning("the terminal key was given on the command line; "
                    "TRADETERM_TERMINAL_KEY keeps it out of process lists")
    if args.poll_interval <= 0 or args.tick_interval <= 0:
        raise ValueError("--poll-interval and --tick-interval must be positive")
    if args.rpyc_timeout <= 0:
        raise ValueError("--rpyc-timeout must be positive")
    if args.rpyc and args.mt5_module:
        raise ValueError("give either --mt5-module or --rpyc (--mt5linux), not both")
    if args.ca_file and not Path(args.ca_file).is_file():
        raise ValueError("--ca-file %s does not exist" % args.ca_file)
    return Settings(
        gateway_url=args.gateway,
        terminal_key=key,
        allow_trading=bool(args.allow_trading),
        ca_file=args.ca_file,
        symbols=[s.strip() for s in args.symbols.split(",") if s.strip()],
        poll_interval=args.poll_interval,
        tick_interval=args.tick_interval,
        state_dir=Path(args.state_dir) if args.state_dir else default_state_dir(),
        uid=args.uid,
        deviation=args.deviation,
        server_time_offset=args.server_time_offset,
        backoff_cap=args.backoff_cap,
        terminal_path=args.terminal_path,
        login=args.login,
        password=args.password or _env("TRADETERM_MT5_PASSWORD"),
        server=args.server,
        init_timeout_ms=args.init_timeout_ms,
    )


async def _serve(settings: Settings, api: Any) -> None:
    # Built inside the running loop: on Python 3.9 asyncio primitives bind to
    # the loop current at their creation.
    agent = Agent(settings, api)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (getattr(signal, "SIGINT", None), getattr(signal, "SIGTERM", None)):
        if sig is None:
            continue
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # Windows: Ctrl+C raises KeyboardInterrupt
            pass
    await agent.run(stop)


def main(argv: Optional[List[str]] = None) -> int:
    args = parser().parse_args(argv)
    level = getattr(logging, str(args.log_level).upper(), logging.INFO)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # websockets logs frames at DEBUG, and the hello frame carries the terminal key.
    logging.getLogger("websockets").setLevel(max(level, logging.INFO))
    try:
        settings = settings_from(args)
        api: Any = load_api(args.mt5_module, args.rpyc, args.rpyc_timeout)
    except (ValueError, RuntimeError) as e:
        print("tradeterm-agent: %s" % e, file=sys.stderr)
        return 2
    log.info(
        "tradeterm-agent %s: gateway %s, allow_trading=%s, symbols=%s, poll %.3f s, ticks %.3f s",
        __version__, agent_url(settings.gateway_url), settings.allow_trading,
        ",".join(settings.symbols) or "-", settings.poll_interval, settings.tick_interval,
    )
    try:
        asyncio.run(_serve(settings, api))
    except KeyboardInterrupt:
        pass
    return 0
