//! Trading costs and account history: swap calendars, expected fills and
//! equity curves (pure functions; the `tradeterm-tools` wrappers fetch the
//! terminal data).
