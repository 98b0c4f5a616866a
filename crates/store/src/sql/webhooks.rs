//! [`WebhookStore`] for [`SqlStore`]: the `webhook_endpoints`,
//! `webhook_deliveries` (the outbox) and `webhook_attempts` tables
//! (migration 0007), the same SQL on both backends.
//!
//! **Claims.** A sender claims due rows with one `UPDATE … WHERE id IN
//! (SELECT … LIMIT n)` whose outer `WHERE` repeats the conditions: on
//! PostgreSQL the inner select skips rows another claimer has locked
//! (`FOR UPDATE SKIP LOCKED`) and a row changed meanwhile is re-checked
//! against the outer conditions before it is updated, so two claimers never
//! hold one row; SQLite runs one writer at a time. The claimed rows are then
//! read back by claimer and lease, which are unique to the call.

use async_trait::async_trait;

use super::rows::RowExt;
use super::{SqlStore, WritePool, lock_license, now_ms, on_pool};
use crate::keys;
use crate::webhook::{
    ClaimedDelivery, MAX_WEBHOOKS_PER_LICENSE, NewWebhookDelivery, WEBHOOK_ATTEMPTS_KEPT, WEBHOOK_SECRET_PREFIX,
    WebhookAttempt, WebhookAttemptOutcome, WebhookBars, WebhookCounts, WebhookEndpoint, WebhookStore, WebhookUpdate,
};
use crate::{Secret, StoreError, StoreResult};

/// Longest URL, bytes.
const MAX_URL_BYTES: usize = 2048;

const ENDPOINT_COLS: &str = "id, license_id, url, types, enabled, created_at, updated_at, disabled_reason, \
                             failing_since, cursor, bars";

fn endpoint<R: RowExt>(r: &R) -> StoreResult<WebhookEndpoint> {
    let types: Vec<String> = serde_json::from_str(&r.text("types")?)
        .map_err(|e| StoreError::Database(format!("webhook types are not a JSON list: {e}")))?;
    Ok(WebhookEndpoint {
        id: r.text("id")?,
        license_id: r.text("license_id")?,
        url: r.text("url")?,
        types,
        enabled: r.flag("enabled")?,
        created_at: r.int("created_at")?,
        updated_at: r.int("updated_at")?,
        disabled_reason: r.opt_text("disabled_reason")?,
        failing_since: r.opt_int("failing_since")?,
        cursor: r.opt_text("cursor")?,
        bars: bars_of(&r.text("bars")?)?,
    })
}

/// The `bars` column: '' for none, else the JSON of [`WebhookBars`].
fn bars_of(text: &str) -> StoreResult<Option<WebhookBars>> {
    if text.is_empty() {
        return Ok(None);
    }
    serde_json::from_str(text)
        .map(Some)
        .map_err(|e| StoreError::Database(format!("webhook bars are not their JSON: {e}")))
}

fn bars_column(bars: Option<&WebhookBars>) -> StoreResult<String> {
    match bars {
        None => Ok(String::new()),
        Some(b) if b.symbols.is_empty() || b.timeframes.is_empty() => Err(StoreError::Invalid(
            "bars: at least one symbol and one timeframe".into(),
        )),
        Some(b) => serde_json::to_string(b).map_err(|e| StoreError::Invalid(format!("bars: {e}"))),
    }
}

fn check_url(url: &str) -> StoreResult<()> {
    if url.is_empty() || url.len() > MAX_URL_BYTES || url.chars().any(char::is_control) {
        return Err(StoreError::Invalid(format!(
            "url must be 1 to {MAX_URL_BYTES} bytes without control characters"
        )));
    }
    Ok(())
}

fn types_json(types: &[String]) -> StoreResult<String> {
    serde_json::to_string(types).map_err(|e| StoreError::Invalid(format!("types: {e}")))
}

/// The claim's inner select on each backend.
trait ClaimSql {
    fn claim_sql(&self) -> &'static str;
}

impl ClaimSql for sqlx::SqlitePool {
    fn claim_sql(&self) -> &'static str {
        concat!(
            "UPDATE webhook_deliveries SET claimed_by = $1, claim_until = $2 \
             WHERE status = 'pending' AND next_attempt_at <= $3 AND (claim_until IS NULL OR claim_until < $3) AND id IN (",
            "SELECT d.id FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id \
             WHERE d.status = 'pending' AND d.next_attempt_at <= $3 AND (d.claim_until IS NULL OR d.claim_until < $3) \
             AND e.enabled = TRUE ORDER BY d.next_attempt_at, d.id LIMIT $4)"
        )
    }
}

impl ClaimSql for sqlx::PgPool {
    fn claim_sql(&self) -> &'static str {
        concat!(
            "UPDATE webhook_deliveries SET claimed_by = $1, claim_until = $2 \
             WHERE status = 'pending' AND next_attempt_at <= $3 AND (claim_until IS NULL OR claim_until < $3) AND id IN (",
            "SELECT d.id FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id \
             WHERE d.status = 'pending' AND d.next_attempt_at <= $3 AND (d.claim_until IS NULL OR d.claim_until < $3) \
             AND e.enabled = TRUE ORDER BY d.next_attempt_at, d.id LIMIT $4 FOR UPDATE OF d SKIP LOCKED)"
        )
    }
}

#[async_trait]
impl WebhookStore for SqlStore {
    async fn create_webhook_with_bars(
        &self,
        license_id: &str,
        url: &str,
        types: &[String],
        bars: Option<&WebhookBars>,
        cursor: Option<&str>,
    ) -> StoreResult<(WebhookEndpoint, Secret)> {
        check_url(url)?;
        let bars_text = bars_column(bars)?;
        let now = now_ms();
        let secret = keys::generate(WEBHOOK_SECRET_PREFIX);
        let endpoint = WebhookEndpoint {
            id: keys::new_id("whk_"),
            license_id: license_id.to_owned(),
            url: url.to_owned(),
            types: types.to_vec(),
            enabled: true,
            created_at: now,
            updated_at: now,
            disabled_reason: None,
            failing_since: None,
            cursor: cursor.map(str::to_owned),
            bars: bars.cloned(),
        };
        let types = types_json(types)?;
        const COUNT: &str = "SELECT COUNT(*) AS n FROM webhook_endpoints WHERE license_id = $1";
        const INSERT: &str = "INSERT INTO webhook_endpoints \
             (id, license_id, url, types, secret, enabled, created_at, updated_at, cursor, bars) \
             VALUES ($1, $2, $3, $4, $5, TRUE, $6, $6, $7, $8)";
        on_pool!(self, pool => {
            let mut tx = pool.begin_write().await?;
            lock_license!(pool, tx, license_id);
            let n = sqlx::query(COUNT).bind(license_id).fetch_one(&mut *tx).await?.int("n")?;
            if n >= MAX_WEBHOOKS_PER_LICENSE as i64 {
                return Err(StoreError::WebhookLimit);
            }
            sqlx::query(INSERT)
                .bind(&endpoint.id)
                .bind(license_id)
                .bind(url)
                .bind(&types)
                .bind(secret.expose())
                .bind(now)
                .bind(cursor)
                .bind(&bars_text)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
        });
        Ok((endpoint, secret))
    }

    async fn webhook(&self, license_id: &str, webhook_id: &str) -> StoreResult<Option<WebhookEndpoint>> {
        let sql = format!("SELECT {ENDPOINT_COLS} FROM webhook_endpoints WHERE id = $1 AND license_id = $2");
        on_pool!(self, pool => sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(webhook_id)
            .bind(license_id)
            .fetch_optional(pool)
            .await?
            .as_ref()
            .map(endpoint)
            .transpose())
    }

    async fn webhook_secret(&self, license_id: &str, webhook_id: &str) -> StoreResult<Option<Secret>> {
        const SQL: &str = "SELECT secret FROM webhook_endpoints WHERE id = $1 AND license_id = $2";
        on_pool!(self, pool => sqlx::query(SQL)
            .bind(webhook_id)
            .bind(license_id)
            .fetch_optional(pool)
            .await?
            .map(|r| r.text("secret").map(Secret::new))
            .transpose())
    }

    async fn list_webhooks(&self, license_id: &str) -> StoreResult<Vec<WebhookEndpoint>> {
        let sql =
            format!("SELECT {ENDPOINT_COLS} FROM webhook_endpoints WHERE license_id = $1 ORDER BY created_at, id");
        on_pool!(self, pool => sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(license_id)
            .fetch_all(pool)
            .await?
            .iter()
            .map(endpoint)
            .collect())
    }

    async fn update_webhook(
        &self,
        license_id: &str,
        webhook_id: &str,
        update: &WebhookUpdate,
    ) -> StoreResult<Option<WebhookEndpoint>> {
        if let Some(url) = &update.url {
            check_url(url)?;
        }
        let types = update.types.as_deref().map(types_json).transpose()?;
        let bars = update.bars.as_ref().map(|b| bars_column(b.as_ref())).transpose()?;
        // Enabling clears the reason and the failure streak; disabling by
        // the owner says so.
        const SQL: &str = "UPDATE webhook_endpoints SET \
             url = COALESCE($1, url), types = COALESCE($2, types), \
             enabled = COALESCE($3, enabled), \
             disabled_reason = CASE WHEN $3 IS NULL THEN disabled_reason WHEN $3 THEN NULL ELSE 'disabled by the owner' END, \
             failing_since = CASE WHEN $3 THEN NULL ELSE failing_since END, \
             bars = COALESCE($7, bars), \
             updated_at = $4 WHERE id = $5 AND license_id = $6";
        let n = on_pool!(self, pool => sqlx::query(SQL)
            .bind(update.url.as_deref())
            .bind(types.as_deref())
            .bind(update.enabled)
            .bind(now_ms())
            .bind(webhook_id)
            .bind(license_id)
            .bind(bars.as_deref())
            .execute(pool)
            .await?
            .rows_affected());
        if n == 0 {
            return Ok(None);
        }
        self.webhook(license_id, webhook_id).await
    }

    async fn delete_webhook(&self, license_id: &str, webhook_id: &str) -> StoreResult<bool> {
        const ATTEMPTS: &str = "DELETE FROM webhook_attempts WHERE endpoint_id = $1 AND license_id = $2";
        const DELIVERIES: &str = "DELETE FROM webhook_deliveries WHERE endpoint_id = $1 AND license_id = $2";
        const ENDPOINT: &str = "DELETE FROM webhook_endpoints WHERE id = $1 AND license_id = $2";
        let n = on_pool!(self, pool => {
            let mut tx = pool.begin_write().await?;
            sqlx::query(ATTEMPTS).bind(webhook_id).bind(license_id).execute(&mut *tx).await?;
            sqlx::query(DELIVERIES).bind(webhook_id).bind(license_id).execute(&mut *tx).await?;
            let n = sqlx::query(ENDPOINT).bind(webhook_id).bind(license_id).execute(&mut *tx).await?.rows_affected();
            tx.commit().await?;
            n
        });
        Ok(n > 0)
    }

    async fn enabled_webhooks(&self) -> StoreResult<Vec<WebhookEndpoint>> {
        let sql = format!(
            "SELECT {ENDPOINT_COLS} FROM webhook_endpoints WHERE enabled = TRUE ORDER BY license_id, created_at, id"
        );
        on_pool!(self, pool => sqlx::query(sqlx::AssertSqlSafe(sql))
            .fetch_all(pool)
            .await?
            .iter()
            .map(endpoint)
            .collect())
    }

    async fn enqueue_webhook_deliveries(
        &self,
        license_id: &str,
        webhook_id: &str,
        deliveries: &[NewWebhookDelivery],
        cursor: &str,
    ) -> StoreResult<u64> {
        const LOCK: &str = "SELECT id FROM webhook_endpoints WHERE id = $1 AND license_id = $2 AND enabled = TRUE";
        const INSERT: &str = "INSERT INTO webhook_deliveries \
             (endpoint_id, license_id, event_id, event_type, body, next_attempt_at, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $6, $6) ON CONFLICT (endpoint_id, event_id) DO NOTHING";
        const CURSOR: &str = "UPDATE webhook_endpoints SET cursor = $1 WHERE id = $2 AND license_id = $3";
        let now = now_ms();
        let added = on_pool!(self, pool => {
            let mut tx = pool.begin_write().await?;
            if sqlx::query(LOCK).bind(webhook_id).bind(license_id).fetch_optional(&mut *tx).await?.is_none() {
                return Ok(0);
            }
            let mut added = 0;
            for d in deliveries {
                added += sqlx::query(INSERT)
                    .bind(webhook_id)
                    .bind(license_id)
                    .bind(&d.event_id)
                    .bind(&d.event_type)
                    .bind(&d.body)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
            }
            sqlx::query(CURSOR).bind(cursor).bind(webhook_id).bind(license_id).execute(&mut *tx).await?;
            tx.commit().await?;
            added
        });
        Ok(added)
    }

    async fn claim_webhook_deliveries(
        &self,
        claimer: &str,
        now: i64,
        claim_until: i64,
        limit: i64,
    ) -> StoreResult<Vec<ClaimedDelivery>> {
        const READ: &str = "SELECT d.id, d.endpoint_id, d.license_id, d.event_id, d.body, d.attempts, d.created_at, \
             e.url, e.secret FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id \
             WHERE d.claimed_by = $1 AND d.claim_until = $2 AND d.status = 'pending' ORDER BY d.next_attempt_at, d.id";
        // Each call's claim is its own (`claimer#nonce`), so reading back
        // finds this call's rows only.
        let claim = format!("{claimer}#{}", keys::new_id(""));
        on_pool!(self, pool => {
            let n = sqlx::query(pool.claim_sql())
                .bind(&claim)
                .bind(claim_until)
                .bind(now)
                .bind(limit)
                .execute(pool)
                .await?
                .rows_affected();
            if n == 0 {
                return Ok(Vec::new());
            }
            sqlx::query(READ)
                .bind(&claim)
                .bind(claim_until)
                .fetch_all(pool)
                .await?
                .iter()
                .map(|r| {
                    Ok(ClaimedDelivery {
                        id: r.int("id")?,
                        endpoint_id: r.text("endpoint_id")?,
                        license_id: r.text("license_id")?,
                        event_id: r.text("event_id")?,
                        body: r.text("body")?,
                        attempts: r.int("attempts")?,
                        created_at: r.int("created_at")?,
                        url: r.text("url")?,
                        secret: Secret::new(r.text("secret")?),
                        claim: claim.clone(),
                    })
                })
                .collect()
        })
    }

    async fn record_webhook_attempt(
        &self,
        license_id: &str,
        delivery_id: i64,
        claim: &str,
        outcome: &WebhookAttemptOutcome,
    ) -> StoreResult<bool> {
        let (status, next) = match (outcome.delivered, outcome.next_attempt_at) {
            (true, _) => ("delivered", outcome.at),
            (false, Some(next)) => ("pending", next),
            (false, None) => ("failed", outcome.at),
        };
        let logged = match status {
            "pending" => "retrying",
            other => other,
        };
        const FIND: &str = "SELECT endpoint_id, event_id, attempts FROM webhook_deliveries \
             WHERE id = $1 AND license_id = $2 AND claimed_by = $3 AND status = 'pending'";
        const UPDATE: &str = "UPDATE webhook_deliveries SET status = $1, attempts = attempts + 1, \
             next_attempt_at = $2, claimed_by = NULL, claim_until = NULL, last_status = $3, last_latency_ms = $4, \
             last_error = $5, updated_at = $6 WHERE id = $7";
        const LOG: &str = "INSERT INTO webhook_attempts \
             (endpoint_id, license_id, delivery_id, event_id, attempt, at, status, latency_ms, error, outcome) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";
        const TRIM: &str = "DELETE FROM webhook_attempts WHERE endpoint_id = $1 AND id <= \
             (SELECT id FROM webhook_attempts WHERE endpoint_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $2)";
        const STREAK_OK: &str = "UPDATE webhook_endpoints SET failing_since = NULL WHERE id = $1";
        const STREAK_FAIL: &str =
            "UPDATE webhook_endpoints SET failing_since = COALESCE(failing_since, $1) WHERE id = $2";
        on_pool!(self, pool => {
            let mut tx = pool.begin_write().await?;
            let Some(row) = sqlx::query(FIND)
                .bind(delivery_id)
                .bind(license_id)
                .bind(claim)
                .fetch_optional(&mut *tx)
                .await?
            else {
                return Ok(false);
            };
            let endpoint_id = row.text("endpoint_id")?;
            let event_id = row.text("event_id")?;
            let attempt = row.int("attempts")? + 1;
            sqlx::query(UPDATE)
                .bind(status)
                .bind(next)
                .bind(outcome.status)
                .bind(outcome.latency_ms)
                .bind(outcome.error.as_deref())
                .bind(outcome.at)
                .bind(delivery_id)
                .execute(&mut *tx)
                .await?;
            sqlx::query(LOG)
                .bind(&endpoint_id)
                .bind(license_id)
                .bind(delivery_id)
                .bind(&event_id)
                .bind(attempt)
                .bind(outcome.at)
                .bind(outcome.status)
                .bind(outcome.latency_ms)
                .bind(outcome.error.as_deref())
                .bind(logged)
                .execute(&mut *tx)
                .await?;
            sqlx::query(TRIM)
                .bind(&endpoint_id)
                .bind(WEBHOOK_ATTEMPTS_KEPT)
                .execute(&mut *tx)
                .await?;
            if outcome.delivered {
                sqlx::query(STREAK_OK).bind(&endpoint_id).execute(&mut *tx).await?;
            } else {
                sqlx::query(STREAK_FAIL).bind(outcome.at).bind(&endpoint_id).execute(&mut *tx).await?;
            }
            tx.commit().await?;
        });
        Ok(true)
    }

    async fn disable_webhook(&self, license_id: &str, webhook_id: &str, reason: &str) -> StoreResult<bool> {
        const SQL: &str = "UPDATE webhook_endpoints SET enabled = FALSE, disabled_reason = $1, updated_at = $2 \
             WHERE id = $3 AND license_id = $4 AND enabled = TRUE";
        let n = on_pool!(self, pool => sqlx::query(SQL)
            .bind(reason)
            .bind(now_ms())
            .bind(webhook_id)
            .bind(license_id)
            .execute(pool)
            .await?
            .rows_affected());
        Ok(n == 1)
    }

    async fn webhook_attempts(
        &self,
        license_id: &str,
        webhook_id: &str,
        limit: i64,
    ) -> StoreResult<Vec<WebhookAttempt>> {
        const SQL: &str = "SELECT delivery_id, event_id, attempt, at, status, latency_ms, error, outcome \
             FROM webhook_attempts WHERE endpoint_id = $1 AND license_id = $2 ORDER BY id DESC LIMIT $3";
        on_pool!(self, pool => sqlx::query(SQL)
            .bind(webhook_id)
            .bind(license_id)
            .bind(limit)
            .fetch_all(pool)
            .await?
            .iter()
            .map(|r| {
                Ok(WebhookAttempt {
                    delivery_id: r.int("delivery_id")?,
                    event_id: r.text("event_id")?,
                    attempt: r.int("attempt")?,
                    at: r.int("at")?,
                    status: r.opt_int("status")?,
                    latency_ms: r.int("latency_ms")?,
                    error: r.opt_text("error")?,
                    outcome: r.text("outcome")?,
                })
            })
            .collect())
    }

    async fn webhook_counts(&self, license_id: &str, webhook_id: &str) -> StoreResult<WebhookCounts> {
        const SQL: &str = "SELECT status, COUNT(*) AS n FROM webhook_deliveries \
             WHERE endpoint_id = $1 AND license_id = $2 GROUP BY status";
        let rows: Vec<(String, i64)> = on_pool!(self, pool => sqlx::query(SQL)
            .bind(webhook_id)
            .bind(license_id)
            .fetch_all(pool)
            .await?
            .iter()
            .map(|r| Ok((r.text("status")?, r.int("n")?)))
            .collect::<StoreResult<_>>()?);
        let mut counts = WebhookCounts::default();
        for (status, n) in rows {
            match status.as_str() {
                "pending" => counts.pending = n,
                "delivered" => counts.delivered = n,
                _ => counts.failed += n,
            }
        }
        Ok(counts)
    }
}
