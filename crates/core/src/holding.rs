//! Holding risk and event sensitivity: what a position held over a window
//! is exposed to (events, weekend gaps, triple swap), and how a symbol
//! reacted to past releases (pure functions).
