//! Market-structure detection without look-ahead.
