//! Technical indicators, streaming first and batch second.
