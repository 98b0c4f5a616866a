//! Order validation, margin and profit maths (being written).
