//! `tradeterm admin verify-audit`: checks the trade audit log's hash chain
//! of one license or of every license (`docs/audit.md`) and names the
//! first broken row.

use std::io::Write;

use anyhow::Context as _;
use tradeterm_store::{Store, verify_chain};

/// Verifies the chain of `license` (every license when `None`), printing one
/// JSON line per license (rows checked, head, anchor, the break if any).
/// An error names the first broken row of the first broken chain; a
/// license that does not exist is an error too.
pub async fn verify_audit(store: &dyn Store, license: Option<&str>, out: &mut dyn Write) -> anyhow::Result<()> {
    let licenses = match license {
        Some(id) => {
            anyhow::ensure!(store.license(id).await?.is_some(), "no license {id}");
            vec![id.to_owned()]
        }
        None => store.list_licenses().await?.into_iter().map(|l| l.id).collect(),
    };
    let mut first_broken = None;
    for id in licenses {
        let report = verify_chain(store, &id)
            .await
            .with_context(|| format!("reading the audit chain of license {id}"))?;
        let broken = report.broken.as_ref().map(ToString::to_string);
        writeln!(
            out,
            "{}",
            serde_json::json!({
                "license": id,
                "ok": broken.is_none(),
                "rows": report.rows,
                "head_seq": report.head.last_seq,
                "head_hash": report.head.last_hash,
                "anchor_seq": report.head.anchor_seq,
                "broken": broken,
            })
        )?;
        if let (None, Some(b)) = (&first_broken, broken) {
            first_broken = Some(format!("the audit chain of license {id} is broken: {b}"));
        }
    }
    match first_broken {
        Some(message) => Err(anyhow::anyhow!(message)),
        None => Ok(()),
    }
}
