"""tradeterm agent protocol v1 bridge for a MetaTrader 5 terminal, through
the ``MetaTrader5`` Python package (or an ``mt5linux`` client)."""

__version__ = "0.1.0"
