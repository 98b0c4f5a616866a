//! [`AuditStore`] for [`SqlStore`]: the `audit_log` and `audit_chains`
//! tables (migration 0009), the same SQL on both backends but for the lock
//! of the chain head.
//!
//! **Appends.** One write transaction: the license's head row is created
//! if missing (`INSERT … ON CONFLICT DO NOTHING`), then read under its row
//! lock (PostgreSQL `SELECT … FOR UPDATE`: a rival append waits for the
//! first to commit and then reads the head it wrote; SQLite `BEGIN
//! IMMEDIATE`, one writer), the row inserted with `seq` = head + 1 and its
//! hash, and the head advanced. `UNIQUE (license_id, seq)` would refuse a
//! second row at one position even if the lock were bypassed.

use async_trait::async_trait;
use sqlx::AssertSqlSafe;
use sqlx::postgres::PgPool;
use sqlx::sqlite::SqlitePool;

use super::rows::RowExt;
use super::{SqlStore, WritePool, now_ms, on_pool};
use crate::audit::{
    AuditChainHead, AuditFilter, AuditRecord, AuditStore, GENESIS_HASH, MAX_AUDIT_JSON_BYTES, MAX_AUDIT_PAGE,
    NewAuditRecord, row_hash,
};
use crate::keys::new_id;
use crate::{StoreError, StoreResult};

const COLS: &str = "id, seq, license_id, at, credential_id, credential_label, surface, source, request_id, tool, \
                    terminal_id, request, decision, code, answer, latency_us, handler_us, prev_hash, hash";

/// Default page of [`AuditStore::audit_page`].
const DEFAULT_PAGE: u32 = 100;

/// The chain head's lock, per backend.
trait HeadLock {
    /// `SELECT last_seq, last_hash FROM audit_chains WHERE license_id = $1`, locking the row where that serializes.
    const HEAD: &'static str;
}

impl HeadLock for SqlitePool {
    const HEAD: &'static str = "SELECT last_seq, last_hash FROM audit_chains WHERE license_id = $1";
}

impl HeadLock for PgPool {
    const HEAD: &'static str = "SELECT last_seq, last_hash FROM audit_chains WHERE license_id = $1 FOR UPDATE";
}

fn head_sql<P: HeadLock>(_: &P) -> &'static str {
    P::HEAD
}

fn record<R: RowExt>(r: &R) -> StoreResult<AuditRecord> {
    Ok(AuditRecord {
        id: r.text("id")?,
        seq: r.int("seq")?,
        license_id: r.text("license_id")?,
        at: r.int("at")?,
        credential_id: r.text("credential_id")?,
        credential_label: r.opt_text("credential_label")?,
        surface: r.text("surface")?,
        source: r.opt_text("source")?,
        request_id: r.opt_text("request_id")?,
        tool: r.text("tool")?,
        terminal_id: r.opt_text("terminal_id")?,
        request: r.text("request")?,
        decision: r.text("decision")?,
        code: r.opt_text("code")?,
        answer: r.opt_text("answer")?,
        latency_us: r.int("latency_us")?,
        handler_us: r.opt_int("handler_us")?,
        prev_hash: r.text("prev_hash")?,
        hash: r.text("hash")?,
    })
}

fn check(new: &NewAuditRecord) -> StoreResult<()> {
    for (what, text) in [("request", Some(&new.request)), ("answer", new.answer.as_ref())] {
        if let Some(text) = text
            && text.len() > MAX_AUDIT_JSON_BYTES
        {
            return Err(StoreError::Invalid(format!(
                "an audit row's {what} may be at most {MAX_AUDIT_JSON_BYTES} bytes"
            )));
        }
    }
    if new.license_id.is_empty() || new.tool.is_empty() || new.decision.is_empty() {
        return Err(StoreError::Invalid(
            "an audit row needs a license, a tool and a decision".into(),
        ));
    }
    Ok(())
}

fn is_foreign_key_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(d) if d.is_foreign_key_violation())
}

#[async_trait]
impl AuditStore for SqlStore {
    async fn append_audit(&self, new: &NewAuditRecord) -> StoreResult<AuditRecord> {
        check(new)?;
        const ENSURE: &str = "INSERT INTO audit_chains (license_id, last_seq, last_hash, anchor_seq, anchor_hash, \
                              updated_at) VALUES ($1, 0, $2, 0, $2, $3) ON CONFLICT (license_id) DO NOTHING";
        const INSERT: &str = "INSERT INTO audit_log (id, seq, license_id, at, credential_id, credential_label, \
                              surface, source, request_id, tool, terminal_id, request, decision, code, answer, \
                              latency_us, handler_us, prev_hash, hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, \
                              $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)";
        const ADVANCE: &str = "UPDATE audit_chains SET last_seq = $1, last_hash = $2, updated_at = $3 \
                               WHERE license_id = $4";
        let mut rec = AuditRecord {
            id: new_id("aud_"),
            seq: 0,
            license_id: new.license_id.clone(),
            at: new.at,
            credential_id: new.credential_id.clone(),
            credential_label: new.credential_label.clone(),
            surface: new.surface.clone(),
            source: new.source.clone(),
            request_id: new.request_id.clone(),
            tool: new.tool.clone(),
            terminal_id: new.terminal_id.clone(),
            request: new.request.clone(),
            decision: new.decision.clone(),
            code: new.code.clone(),
            answer: new.answer.clone(),
            latency_us: new.latency_us,
            handler_us: new.handler_us,
            prev_hash: String::new(),
            hash: String::new(),
        };
        let now = now_ms();
        let done: Result<(), sqlx::Error> = on_pool!(self, pool => {
            async {
                let mut tx = pool.begin_write().await?;
                sqlx::query(ENSURE)
                    .bind(&new.license_id)
                    .bind(GENESIS_HASH)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
                let head = sqlx::query(head_sql(pool)).bind(&new.license_id).fetch_one(&mut *tx).await?;
                let last_seq: i64 = sqlx::Row::try_get(&head, "last_seq")?;
                let last_hash: String = sqlx::Row::try_get(&head, "last_hash")?;
                rec.seq = last_seq + 1;
                rec.prev_hash = last_hash;
                rec.hash = row_hash(&rec);
                sqlx::query(INSERT)
                    .bind(&rec.id)
                    .bind(rec.seq)
                    .bind(&rec.license_id)
                    .bind(rec.at)
                    .bind(&rec.credential_id)
                    .bind(&rec.credential_label)
                    .bind(&rec.surface)
                    .bind(&rec.source)
                    .bind(&rec.request_id)
                    .bind(&rec.tool)
                    .bind(&rec.terminal_id)
                    .bind(&rec.request)
                    .bind(&rec.decision)
                    .bind(&rec.code)
                    .bind(&rec.answer)
                    .bind(rec.latency_us)
                    .bind(rec.handler_us)
                    .bind(&rec.prev_hash)
                    .bind(&rec.hash)
                    .execute(&mut *tx)
                    .await?;
                sqlx::query(ADVANCE)
                    .bind(rec.seq)
                    .bind(&rec.hash)
                    .bind(now)
                    .bind(&rec.license_id)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await
            }
            .await
        });
        match done {
            Ok(()) => Ok(rec),
            Err(e) if is_foreign_key_violation(&e) => Err(StoreError::NotFound("license")),
            Err(e) => Err(e.into()),
        }
    }

    async fn audit_page(&self, license_id: &str, filter: &AuditFilter) -> StoreResult<Vec<AuditRecord>> {
        enum Bind<'a> {
            Text(&'a str),
            Int(i64),
        }
        let mut sql = format!("SELECT {COLS} FROM audit_log WHERE license_id = $1");
        let mut binds: Vec<Bind<'_>> = vec![Bind::Text(license_id)];
        {
            // Only these fixed fragments are spliced in; every value is bound.
            let mut and = |fragment: &str, bind| {
                binds.push(bind);
                sql.push_str(&format!(" AND {fragment} ${}", binds.len()));
            };
            if let Some(v) = filter.from {
                and("at >=", Bind::Int(v));
            }
            if let Some(v) = filter.to {
                and("at <", Bind::Int(v));
            }
            if let Some(v) = &filter.tool {
                and("tool =", Bind::Text(v));
            }
            if let Some(v) = &filter.terminal_id {
                and("terminal_id =", Bind::Text(v));
            }
            if let Some(v) = &filter.credential_id {
                and("credential_id =", Bind::Text(v));
            }
            if let Some(v) = &filter.decision {
                and("decision =", Bind::Text(v));
            }
            if let Some(v) = &filter.surface {
                and("surface =", Bind::Text(v));
            }
            if let Some(v) = filter.before_seq {
                and("seq <", Bind::Int(v));
            }
        }
        let limit = match filter.limit {
            0 => DEFAULT_PAGE,
            n => n.min(MAX_AUDIT_PAGE),
        };
        sql.push_str(&format!(" ORDER BY seq DESC LIMIT {limit}"));
        on_pool!(self, pool => {
            let mut query = sqlx::query(AssertSqlSafe(sql.as_str()));
            for bind in &binds {
                query = match bind {
                    Bind::Text(s) => query.bind(*s),
                    Bind::Int(i) => query.bind(*i),
                };
            }
            query.fetch_all(pool).await?.iter().map(record).collect()
        })
    }

    async fn audit_chain(&self, license_id: &str, after_seq: i64, limit: u32) -> StoreResult<Vec<AuditRecord>> {
        let sql = format!(
            "SELECT {COLS} FROM audit_log WHERE license_id = $1 AND seq > $2 ORDER BY seq ASC LIMIT {}",
            limit.clamp(1, MAX_AUDIT_PAGE)
        );
        on_pool!(self, pool => sqlx::query(AssertSqlSafe(sql.as_str()))
            .bind(license_id)
            .bind(after_seq)
            .fetch_all(pool)
            .await?
            .iter()
            .map(record)
            .collect())
    }

    async fn audit_head(&self, license_id: &str) -> StoreResult<AuditChainHead> {
        const SQL: &str = "SELECT last_seq, last_hash, anchor_seq, anchor_hash FROM audit_chains WHERE license_id = $1";
        let row = on_pool!(self, pool => sqlx::query(SQL)
            .bind(license_id)
            .fetch_optional(pool)
            .await?
            .map(|r| -> StoreResult<AuditChainHead> {
                Ok(AuditChainHead {
                    last_seq: r.int("last_seq")?,
                    last_hash: r.text("last_hash")?,
                    anchor_seq: r.int("anchor_seq")?,
                    anchor_hash: r.text("anchor_hash")?,
                })
            })
            .transpose()?);
        Ok(row.unwrap_or_else(AuditChainHead::empty))
    }

    async fn prune_audit(&self, before_ms: i64) -> StoreResult<u64> {
        const LICENSES: &str = "SELECT DISTINCT license_id FROM audit_log WHERE at < $1";
        // The last row to go: the newest of those older than the cutoff.
        const LAST: &str = "SELECT seq, hash FROM audit_log WHERE license_id = $1 AND at < $2 \
                            ORDER BY seq DESC LIMIT 1";
        const DELETE: &str = "DELETE FROM audit_log WHERE license_id = $1 AND seq <= $2";
        const ANCHOR: &str = "UPDATE audit_chains SET anchor_seq = $1, anchor_hash = $2, updated_at = $3 \
                              WHERE license_id = $4 AND anchor_seq < $1";
        let licenses: Vec<String> = on_pool!(self, pool => sqlx::query(LICENSES)
            .bind(before_ms)
            .fetch_all(pool)
            .await?
            .iter()
            .map(|r| r.text("license_id"))
            .collect::<StoreResult<_>>()?);
        let mut deleted = 0u64;
        for license in licenses {
            deleted += on_pool!(self, pool => {
                let mut tx = pool.begin_write().await?;
                // The head's lock: appends of this license wait.
                sqlx::query(head_sql(pool)).bind(&license).fetch_optional(&mut *tx).await?;
                let Some(last) = sqlx::query(LAST).bind(&license).bind(before_ms).fetch_optional(&mut *tx).await?
                else {
                    continue;
                };
                let seq = last.int("seq")?;
                let hash = last.text("hash")?;
                sqlx::query(ANCHOR)
                    .bind(seq)
                    .bind(&hash)
                    .bind(now_ms())
                    .bind(&license)
                    .execute(&mut *tx)
                    .await?;
                let n = sqlx::query(DELETE).bind(&license).bind(seq).execute(&mut *tx).await?.rows_affected();
                tx.commit().await?;
                n
            });
        }
        Ok(deleted)
    }
}
