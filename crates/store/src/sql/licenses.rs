//! Licenses: creation (with a hashed master key), lookup by id or master
//! key, listing, tier changes and the owner's settings.

use super::rows::{self, RowExt, license_cols};
use super::{SqlStore, now_ms, on_pool, validate};
use crate::keys::{self, LICENSE_KEY_PREFIX, hash_key, hashes_equal};
use crate::{License, LicenseSettings, Secret, StoreError, StoreResult, Tier};

pub(super) async fn create_license(store: &SqlStore, name: &str, tier: Tier) -> StoreResult<(License, Secret)> {
    validate::name("license name", name)?;
    let secret = keys::generate(LICENSE_KEY_PREFIX);
    let hash = hash_key(secret.expose());
    let license = License {
        id: keys::new_id("lic_"),
        name: name.to_owned(),
        tier,
        created_at: now_ms(),
        disabled: false,
    };
    const SQL: &str = "INSERT INTO licenses (id, name, tier, master_key_hash, created_at) VALUES ($1, $2, $3, $4, $5)";
    on_pool!(store, pool => {
        sqlx::query(SQL)
            .bind(&license.id)
            .bind(&license.name)
            .bind(tier.as_str())
            .bind(&hash)
            .bind(license.created_at)
            .execute(pool)
            .await?;
    });
    Ok((license, secret))
}

pub(super) async fn license(store: &SqlStore, license_id: &str) -> StoreResult<Option<License>> {
    const SQL: &str = concat!("SELECT ", license_cols!(), " FROM licenses l WHERE l.id = $1");
    on_pool!(store, pool => sqlx::query(SQL)
        .bind(license_id)
        .fetch_optional(pool)
        .await?
        .map(|r| rows::license(&r))
        .transpose())
}

pub(super) async fn license_by_master_key(store: &SqlStore, master_key: &str) -> StoreResult<Option<License>> {
    const SQL: &str = concat!(
        "SELECT ",
        license_cols!(),
        ", l.master_key_hash AS l_hash FROM licenses l WHERE l.master_key_hash = $1 AND l.disabled = FALSE"
    );
    let hash = hash_key(master_key);
    let found = on_pool!(store, pool => match sqlx::query(SQL).bind(&hash).fetch_optional(pool).await? {
        Some(r) => Some((rows::license(&r)?, r.text("l_hash")?)),
        None => None,
    });
    Ok(found.and_then(|(license, stored)| hashes_equal(&stored, &hash).then_some(license)))
}

pub(super) async fn list_licenses(store: &SqlStore) -> StoreResult<Vec<License>> {
    const SQL: &str = concat!(
        "SELECT ",
        license_cols!(),
        " FROM licenses l ORDER BY l.created_at, l.seq"
    );
    on_pool!(store, pool => sqlx::query(SQL)
        .fetch_all(pool)
        .await?
        .iter()
        .map(rows::license)
        .collect())
}

pub(super) async fn set_license_tier(store: &SqlStore, license_id: &str, tier: Tier) -> StoreResult<()> {
    const SQL: &str = "UPDATE licenses SET tier = $1 WHERE id = $2";
    let n = on_pool!(store, pool => sqlx::query(SQL)
        .bind(tier.as_str())
        .bind(license_id)
        .execute(pool)
        .await?
        .rows_affected());
    if n == 0 {
        return Err(StoreError::NotFound("license"));
    }
    Ok(())
}

pub(super) async fn license_settings(store: &SqlStore, license_id: &str) -> StoreResult<LicenseSettings> {
    const SQL: &str = "SELECT mcp_confirm_trades FROM licenses WHERE id = $1";
    let found = on_pool!(store, pool => match sqlx::query(SQL).bind(license_id).fetch_optional(pool).await? {
        Some(r) => Some(r.flag("mcp_confirm_trades")?),
        None => None,
    });
    let mcp_trade_confirmation = found.ok_or(StoreError::NotFound("license"))?;
    Ok(LicenseSettings { mcp_trade_confirmation })
}

pub(super) async fn set_license_settings(
    store: &SqlStore,
    license_id: &str,
    settings: &LicenseSettings,
) -> StoreResult<()> {
    const SQL: &str = "UPDATE licenses SET mcp_confirm_trades = $1 WHERE id = $2";
    let n = on_pool!(store, pool => sqlx::query(SQL)
        .bind(settings.mcp_trade_confirmation)
        .bind(license_id)
        .execute(pool)
        .await?
        .rows_affected());
    if n == 0 {
        return Err(StoreError::NotFound("license"));
    }
    Ok(())
}
