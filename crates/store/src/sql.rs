//! SQL backends (placeholder, being written).
