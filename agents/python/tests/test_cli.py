"""Options and environment variables of ``tradeterm-agent``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tradeterm_agent import cli


def settings(monkeypatch: Any, argv: Any, **env: str) -> Any:
    for k in list(__import__("os").environ):
        if k.startswith("TRADETERM_"):
            monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return cli.settings_from(cli.parser().parse_args(argv))


def test_environment_and_defaults(monkeypatch: Any, tmp_path: Path) -> None:
    s = settings(monkeypatch, [], TRADETERM_GATEWAY_URL="wss://gw:8081", TRADETERM_TERMINAL_KEY="tt_term_k",
                 TRADETERM_SYMBOLS="EURUSD, GBPUSD", TRADETERM_STATE_DIR=str(tmp_path),
                 TRADETERM_MT5_PASSWORD="secret")
    assert (s.gateway_url, s.terminal_key, s.symbols) == ("wss://gw:8081", "tt_term_k", ["EURUSD", "GBPUSD"])
    assert s.allow_trading is False and s.poll_interval == 0.25 and s.tick_interval == 0.1
    assert s.state_dir == tmp_path and s.password == "secret" and s.backoff_cap == 10.0
    s = settings(monkeypatch, ["--gateway", "ws://x:1", "--allow-trading", "--poll-interval", "0.5",
                               "--login", "42", "--server", "Demo", "--terminal-path", "C:/t.exe"],
                 TRADETERM_GATEWAY_URL="ws://ignored:2", TRADETERM_TERMINAL_KEY="tt_term_k")
    assert s.gateway_url == "ws://x:1" and s.allow_trading and s.poll_interval == 0.5
    assert (s.login, s.server, s.terminal_path) == (42, "Demo", "C:/t.exe")
    assert settings(monkeypatch, [], TRADETERM_GATEWAY_URL="ws://x:1", TRADETERM_TERMINAL_KEY="k",
                    TRADETERM_ALLOW_TRADING="true").allow_trading


def test_bad_configurations_are_refused(monkeypatch: Any, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="gateway URL is required"):
        settings(monkeypatch, [], TRADETERM_TERMINAL_KEY="k")
    with pytest.raises(ValueError, match="terminal key is required"):
        settings(monkeypatch, ["--gateway", "ws://x:1"])
    with pytest.raises(ValueError, match="must start with"):
        settings(monkeypatch, ["--gateway", "tcp://x:1"], TRADETERM_TERMINAL_KEY="k")
    with pytest.raises(ValueError, match="ca-file"):
        settings(monkeypatch, ["--gateway", "wss://x:1", "--ca-file", str(tmp_path / "none.pem")],
                 TRADETERM_TERMINAL_KEY="k")
    assert cli.main(["--gateway", "ws://x:1"]) == 2  # no key: usage error, nothing started


def test_missing_terminal_module_is_a_clear_error(monkeypatch: Any, capsys: Any) -> None:
    monkeypatch.setenv("TRADETERM_TERMINAL_KEY", "tt_term_k")
    assert cli.main(["--gateway", "ws://x:1", "--mt5-module", "no_such_module_xyz"]) == 2
    err = capsys.readouterr().err
    assert "no_such_module_xyz" in err and "--mt5linux" in err and "tt_term_k" not in err


def test_rpyc_option_and_its_alias(monkeypatch: Any) -> None:
    for k in list(__import__("os").environ):
        if k.startswith("TRADETERM_"):
            monkeypatch.delenv(k, raising=False)
    p = cli.parser()
    assert p.parse_args(["--rpyc", "127.0.0.1:18812"]).rpyc == "127.0.0.1:18812"
    assert p.parse_args(["--mt5linux", "10.0.0.5:18812"]).rpyc == "10.0.0.5:18812"  # the old name, same link
    assert p.parse_args([]).rpyc_timeout == 90.0
    monkeypatch.setenv("TRADETERM_MT5LINUX", "h:1")
    assert cli.parser().parse_args([]).rpyc == "h:1"
    monkeypatch.setenv("TRADETERM_RPYC", "h:2")
    assert cli.parser().parse_args([]).rpyc == "h:2"
    with pytest.raises(ValueError, match="not both"):
        settings(monkeypatch, ["--gateway", "ws://x:1", "--rpyc", "h:1", "--mt5-module", "fake_mt5"],
                 TRADETERM_TERMINAL_KEY="k")
    with pytest.raises(ValueError, match="rpyc-timeout"):
        settings(monkeypatch, ["--gateway", "ws://x:1", "--rpyc-timeout", "0"], TRADETERM_TERMINAL_KEY="k")
    monkeypatch.setenv("TRADETERM_TERMINAL_KEY", "tt_term_k")
    assert cli.main(["--gateway", "ws://x:1", "--rpyc", "no-port"]) == 2
