//! Small helpers shared by the structure detectors.

use std::cmp::Ordering;

/// An `f64` usable as a heap key. Only finite values reach the detectors
/// (bars are validated first), and `total_cmp` gives a total order anyway.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Key(pub(crate) f64);

impl Eq for Key {}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}
