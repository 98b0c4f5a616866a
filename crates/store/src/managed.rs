//! Exits the server manages (`docs/managed-exits.md`): the [`ManagedStore`]
//! section of the store, a supertrait of [`crate::Store`].
//!
//! - **Rules**: at most [`MAX_MANAGED_PER_TERMINAL`] that have not ended per
//!   terminal, each with what it does (`spec`) and its progress (`state`),
//!   both JSON the store does not read, and a `version` that rises on every
//!   write: a step is written only at the version it was decided at
//!   (compare-and-swap).
//! - **Claims**: exactly one instance evaluates a rule. An evaluator calls
//!   [`ManagedStore::claim_managed_orders`] periodically: it renews the
//!   leases it holds and takes rules whose lease lapsed (their owner died or
//!   stopped), and gets back exactly the rules it holds now. Every write of
//!   a step names the owner and fails once another instance took the rule,
//!   so an evaluator that lost its lease cannot act on stale state.
//!
//! **Invariants:** every method acting for a license takes its id and touches
//! nothing of another license; the evaluator's methods (claims and steps)
//! act across licenses and hand each rule with its license.

use async_trait::async_trait;

use crate::StoreResult;

/// At most this many rules that have not ended per terminal.
pub const MAX_MANAGED_PER_TERMINAL: usize = 100;

/// Whether a rule is evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ManagedStatus {
    /// Evaluated on every quote.
    Active,
    /// Its terminal is unreachable: nothing is sent until it is back.
    Paused,
    /// Over (`ended_reason` says why); never evaluated again.
    Ended,
}

impl ManagedStatus {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            ManagedStatus::Active => "active",
            ManagedStatus::Paused => "paused",
            ManagedStatus::Ended => "ended",
        }
    }

    /// Reads a stored name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "active" => Some(ManagedStatus::Active),
            "paused" => Some(ManagedStatus::Paused),
            "ended" => Some(ManagedStatus::Ended),
            _ => None,
        }
    }
}

/// A stored rule.
#[derive(Debug, Clone, PartialEq)]
pub struct ManagedOrderRecord {
    /// `mxo_…`.
    pub id: String,
    /// Owner.
    pub license_id: String,
    /// The terminal it acts on.
    pub terminal_id: String,
    /// `trailing_stop`, `breakeven`, `oco`, `bracket`.
    pub kind: String,
    /// The caller's label.
    pub label: String,
    /// What it does (JSON).
    pub spec: serde_json::Value,
    /// Its progress (JSON).
    pub state: serde_json::Value,
    /// The credential and capabilities it acts with (JSON, never a secret).
    pub caller: serde_json::Value,
    /// Simulated: it sends nothing.
    pub dry_run: bool,
    /// Evaluated, paused or over.
    pub status: ManagedStatus,
    /// Why it ended.
    pub ended_reason: Option<String>,
    /// Rises on every write.
    pub version: i64,
    /// The instance evaluating it.
    pub owner: Option<String>,
    /// Until when the owner's claim holds, unix ms.
    pub lease_until: Option<i64>,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms of the last write.
    pub updated_at: i64,
}

/// A rule to create (active, version 1, unclaimed).
#[derive(Debug, Clone)]
pub struct NewManagedOrder<'a> {
    /// Owner.
    pub license_id: &'a str,
    /// A terminal of the license.
    pub terminal_id: &'a str,
    /// Its kind.
    pub kind: &'a str,
    /// At most 200 characters.
    pub label: &'a str,
    /// What it does (at most 16 KiB of JSON).
    pub spec: &'a serde_json::Value,
    /// Its starting progress (at most 64 KiB of JSON).
    pub state: &'a serde_json::Value,
    /// Who it acts for (at most 4 KiB of JSON).
    pub caller: &'a serde_json::Value,
    /// Simulated.
    pub dry_run: bool,
}

/// A step of a rule to write.
#[derive(Debug, Clone)]
pub struct ManagedStep<'a> {
    /// The rule.
    pub id: &'a str,
    /// The instance writing (must hold the claim).
    pub owner: &'a str,
    /// The version the step was decided at.
    pub expected_version: i64,
    /// The new progress.
    pub state: &'a serde_json::Value,
    /// The new status.
    pub status: ManagedStatus,
    /// Why it ended (with [`ManagedStatus::Ended`]).
    pub ended_reason: Option<&'a str>,
}

/// The store's section of managed exits.
#[async_trait]
pub trait ManagedStore: Send + Sync + 'static {
    /// Creates a rule on a terminal of the license. Beyond
    /// [`MAX_MANAGED_PER_TERMINAL`] rules that have not ended:
    /// [`crate::StoreError::Invalid`]; a terminal that is not the license's:
    /// [`crate::StoreError::NotFound`].
    async fn create_managed_order(&self, new: &NewManagedOrder<'_>) -> StoreResult<ManagedOrderRecord>;
    /// The license's rules, of one terminal or of all, oldest first; ended
    /// ones only with `include_ended`.
    async fn managed_orders(
        &self,
        license_id: &str,
        terminal_id: Option<&str>,
        include_ended: bool,
    ) -> StoreResult<Vec<ManagedOrderRecord>>;
    /// One rule of the license.
    async fn managed_order(&self, license_id: &str, id: &str) -> StoreResult<Option<ManagedOrderRecord>>;
    /// Ends a rule of the license that has not ended (`Ok(None)` when there
    /// is none), whoever holds it: its owner's next write fails.
    async fn end_managed_order(
        &self,
        license_id: &str,
        id: &str,
        reason: &str,
    ) -> StoreResult<Option<ManagedOrderRecord>>;
    /// For the evaluator `owner`: renews its leases and takes the rules whose
    /// lease lapsed before `now_ms`, all until `lease_until`; returns every
    /// rule that has not ended it now holds (of every license).
    async fn claim_managed_orders(
        &self,
        owner: &str,
        now_ms: i64,
        lease_until: i64,
    ) -> StoreResult<Vec<ManagedOrderRecord>>;
    /// Gives up the claims of `owner` (a graceful stop), so another instance
    /// takes them at once.
    async fn release_managed_orders(&self, owner: &str) -> StoreResult<u64>;
    /// Writes a step when the rule is at the expected version, held by the
    /// owner and not ended: `Some(new version)`, else `None` (nothing written).
    async fn record_managed_step(&self, step: &ManagedStep<'_>) -> StoreResult<Option<i64>>;
}
