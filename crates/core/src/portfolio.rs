//! Portfolio analytics: correlation matrices across symbols and exposure
//! checks of open positions (pure functions; the `tradeterm-tools` wrappers
//! fetch the terminal data).
