//! Column lists and row-to-record mapping, shared by both backends.
//!
//! Queries select columns under fixed aliases (`l_…` for licenses, `t_…` for
//! terminals, `k_…` for API keys, `j_…` for journal entries), so one mapping
//! function per record serves every query and both backends.

use sqlx::Row;
use sqlx::postgres::PgRow;
use sqlx::sqlite::SqliteRow;

use crate::{ApiKey, JournalEntry, License, StoreError, StoreResult, Terminal, TerminalInfo, TerminalKey, Tier};

/// License columns of `licenses l`.
macro_rules! license_cols {
    () => {
        "l.id AS l_id, l.name AS l_name, l.tier AS l_tier, l.created_at AS l_created_at, l.disabled AS l_disabled"
    };
}

/// Terminal columns of `terminals t`.
macro_rules! terminal_cols {
    () => {
        "t.id AS t_id, t.license_id AS t_license_id, t.name AS t_name, t.fingerprint AS t_fingerprint, \
         t.bound_at AS t_bound_at, t.created_at AS t_created_at, t.last_seen AS t_last_seen, \
         t.platform AS t_platform, t.build AS t_build, t.account_login AS t_account_login, \
         t.account_server AS t_account_server, t.account_currency AS t_account_currency, \
         t.trade_mode AS t_trade_mode"
    };
}

/// API key columns of `api_keys k` (never the hash).
macro_rules! api_key_cols {
    () => {
        "k.id AS k_id, k.license_id AS k_license_id, k.label AS k_label, k.prefix AS k_prefix, \
         k.permissions AS k_permissions, k.created_at AS k_created_at, k.revoked_at AS k_revoked_at, \
         k.last_used_at AS k_last_used_at, k.scope_gen AS k_scope_gen, k.scope_changed_at AS k_scope_changed_at"
    };
}

/// Journal columns of `journal_entries j`.
macro_rules! journal_cols {
    () => {
        "j.id AS j_id, j.license_id AS j_license_id, j.terminal_id AS j_terminal_id, \
         j.created_at AS j_created_at, j.updated_at AS j_updated_at, j.body AS j_body"
    };
}

pub(super) use {api_key_cols, journal_cols, license_cols, terminal_cols};

/// Typed column access with the same Rust types on both backends.
pub(super) trait RowExt {
    fn text(&self, col: &str) -> StoreResult<String>;
    fn opt_text(&self, col: &str) -> StoreResult<Option<String>>;
    fn int(&self, col: &str) -> StoreResult<i64>;
    fn opt_int(&self, col: &str) -> StoreResult<Option<i64>>;
    fn flag(&self, col: &str) -> StoreResult<bool>;
}

macro_rules! impl_row_ext {
    ($row:ty) => {
        impl RowExt for $row {
            fn text(&self, col: &str) -> StoreResult<String> {
                Ok(self.try_get(col)?)
            }
            fn opt_text(&self, col: &str) -> StoreResult<Option<String>> {
                Ok(self.try_get(col)?)
            }
            fn int(&self, col: &str) -> StoreResult<i64> {
                Ok(self.try_get(col)?)
            }
            fn opt_int(&self, col: &str) -> StoreResult<Option<i64>> {
                Ok(self.try_get(col)?)
            }
            fn flag(&self, col: &str) -> StoreResult<bool> {
                Ok(self.try_get(col)?)
            }
        }
    };
}

impl_row_ext!(SqliteRow);
impl_row_ext!(PgRow);

fn corrupt(what: &str) -> StoreError {
    StoreError::Database(format!("stored {what} is not valid"))
}

fn json(text: &str, what: &str) -> StoreResult<serde_json::Value> {
    serde_json::from_str(text).map_err(|_| corrupt(what))
}

pub(super) fn license(r: &impl RowExt) -> StoreResult<License> {
    let tier = r.text("l_tier")?;
    Ok(License {
        id: r.text("l_id")?,
        name: r.text("l_name")?,
        tier: Tier::parse(&tier).ok_or_else(|| corrupt("tier"))?,
        created_at: r.int("l_created_at")?,
        disabled: r.flag("l_disabled")?,
    })
}

pub(super) fn terminal(r: &impl RowExt) -> StoreResult<Terminal> {
    let info = match r.opt_text("t_platform")? {
        None => None,
        Some(platform) => Some(TerminalInfo {
            platform,
            build: u32::try_from(r.opt_int("t_build")?.unwrap_or_default()).map_err(|_| corrupt("build"))?,
            account_login: u64::try_from(r.opt_int("t_account_login")?.unwrap_or_default())
                .map_err(|_| corrupt("account login"))?,
            account_server: r.opt_text("t_account_server")?.unwrap_or_default(),
            account_currency: r.opt_text("t_account_currency")?.unwrap_or_default(),
            trade_mode: r.opt_text("t_trade_mode")?.unwrap_or_default(),
        }),
    };
    Ok(Terminal {
        id: r.text("t_id")?,
        license_id: r.text("t_license_id")?,
        name: r.text("t_name")?,
        fingerprint: r.opt_text("t_fingerprint")?,
        bound_at: r.opt_int("t_bound_at")?,
        created_at: r.int("t_created_at")?,
        last_seen: r.opt_int("t_last_seen")?,
        info,
    })
}

pub(super) fn api_key(r: &impl RowExt) -> StoreResult<ApiKey> {
    Ok(ApiKey {
        id: r.text("k_id")?,
        license_id: r.text("k_license_id")?,
        label: r.text("k_label")?,
        prefix: r.text("k_prefix")?,
        permissions: r
            .opt_text("k_permissions")?
            .map(|p| json(&p, "permissions"))
            .transpose()?,
        created_at: r.int("k_created_at")?,
        revoked_at: r.opt_int("k_revoked_at")?,
        last_used_at: r.opt_int("k_last_used_at")?,
        scope_generation: generation(r.int("k_scope_gen")?),
        scope_changed_at: r.opt_int("k_scope_changed_at")?,
    })
}

/// Terminal key columns of `terminal_keys tk` (never the hash).
macro_rules! terminal_key_cols {
    () => {
        "tk.id AS tk_id, tk.license_id AS tk_license_id, tk.terminal_id AS tk_terminal_id, \
         tk.permissions AS tk_permissions, tk.scope_gen AS tk_scope_gen, \
         tk.scope_changed_at AS tk_scope_changed_at, tk.created_at AS tk_created_at, tk.revoked_at AS tk_revoked_at"
    };
}

pub(super) use terminal_key_cols;

pub(super) fn terminal_key(r: &impl RowExt) -> StoreResult<TerminalKey> {
    Ok(TerminalKey {
        id: r.text("tk_id")?,
        license_id: r.text("tk_license_id")?,
        terminal_id: r.text("tk_terminal_id")?,
        permissions: r
            .opt_text("tk_permissions")?
            .map(|p| json(&p, "permissions"))
            .transpose()?,
        scope_generation: generation(r.int("tk_scope_gen")?),
        scope_changed_at: r.opt_int("tk_scope_changed_at")?,
        created_at: r.int("tk_created_at")?,
        revoked_at: r.opt_int("tk_revoked_at")?,
    })
}

/// A stored scope generation (never negative; saturated at `u32::MAX`).
pub(super) fn generation(n: i64) -> u32 {
    u32::try_from(n.max(0)).unwrap_or(u32::MAX)
}

pub(super) fn journal_entry(r: &impl RowExt) -> StoreResult<JournalEntry> {
    Ok(JournalEntry {
        id: r.text("j_id")?,
        license_id: r.text("j_license_id")?,
        terminal_id: r.opt_text("j_terminal_id")?,
        created_at: r.int("j_created_at")?,
        updated_at: r.int("j_updated_at")?,
        body: json(&r.text("j_body")?, "journal body")?,
    })
}

/// A JSON column read back (`what` names it in the error).
pub(super) fn json_col<R: RowExt>(r: &R, col: &str, what: &str) -> StoreResult<serde_json::Value> {
    serde_json::from_str(&r.text(col)?).map_err(|_| StoreError::Database(format!("a stored {what} is not valid JSON")))
}

/// A JSON value as the text stored, at most `max` bytes (`what` names it in the error).
pub(super) fn json_text(value: &serde_json::Value, what: &str, max: usize) -> StoreResult<String> {
    let text = serde_json::to_string(value).map_err(|e| StoreError::Invalid(format!("{what}: {e}")))?;
    if text.len() > max {
        return Err(StoreError::Invalid(format!(
            "the {what} may be at most {max} bytes of JSON"
        )));
    }
    Ok(text)
}
