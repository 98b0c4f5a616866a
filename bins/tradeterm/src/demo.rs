//! The demo license of the local stack: created on first start, written to
//! `DATA_DIR/demo-credentials.json` (mode 0600) and reused afterwards.

use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use tradeterm_store::{Store, Tier};

/// File name of the demo credentials inside the data dir.
pub const FILE_NAME: &str = "demo-credentials.json";

/// One demo terminal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DemoTerminal {
    /// Terminal id (`X-Terminal-Id`).
    pub id: String,
    /// Terminal key (agent and MCP credential).
    pub key: String,
}

/// The content of `demo-credentials.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DemoCredentials {
    /// Demo license id.
    pub license_id: String,
    /// Master license key (dashboard endpoints).
    pub license_key: String,
    /// REST API key.
    pub api_key: String,
    /// One terminal per simulated terminal.
    pub terminals: Vec<DemoTerminal>,
    /// REST base URL.
    pub rest_url: String,
    /// Gateway base URL.
    pub gateway_url: String,
    /// MCP endpoint URL.
    pub mcp_url: String,
}

/// Public URLs written into the credentials file.
#[derive(Debug, Clone)]
pub struct Urls {
    /// REST base URL.
    pub rest: String,
    /// Gateway base URL.
    pub gateway: String,
    /// MCP endpoint URL.
    pub mcp: String,
}

/// Loads the demo credentials if they still match the store, creating what is
/// missing (the license, its API key, terminals up to `terminals`), and
/// writes the file back. Returns the credentials and whether they were created now.
pub async fn ensure(
    store: &dyn Store,
    data_dir: &Path,
    terminals: usize,
    urls: &Urls,
) -> anyhow::Result<(DemoCredentials, bool)> {
    let path = data_dir.join(FILE_NAME);
    let existing = match std::fs::read(&path) {
        Ok(bytes) => match serde_json::from_slice::<DemoCredentials>(&bytes) {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "unreadable demo credentials; creating new ones");
                None
            }
        },
        Err(_) => None,
    };
    // Reuse only if the store still knows the license and the API key.
    let reusable = match existing {
        Some(c) => {
            let license_ok = store
                .license_by_master_key(&c.license_key)
                .await?
                .is_some_and(|l| l.id == c.license_id);
            let api_ok = store.api_key(&c.api_key).await?.is_some();
            (license_ok && api_ok).then_some(c)
        }
        None => None,
    };
    let created = reusable.is_none();
    let mut creds = match reusable {
        Some(c) => c,
        None => {
            let (license, master) = store.create_license("demo", Tier::Pro).await?;
            let (_, api_key) = store.create_api_key(&license.id, "demo").await?;
            DemoCredentials {
                license_id: license.id,
                license_key: master.expose().to_owned(),
                api_key: api_key.expose().to_owned(),
                terminals: Vec::new(),
                rest_url: String::new(),
                gateway_url: String::new(),
                mcp_url: String::new(),
            }
        }
    };
    // Drop terminals whose key no longer resolves, then add up to `terminals`.
    let mut kept = Vec::new();
    for t in creds.terminals.drain(..) {
        if store.terminal_key(&t.key).await?.is_some_and(|a| a.terminal.id == t.id) {
            kept.push(t);
        }
    }
    creds.terminals = kept;
    while creds.terminals.len() < terminals {
        let n = creds.terminals.len() + 1;
        let (t, key) = store.create_terminal(&creds.license_id, &format!("sim-{n}")).await?;
        creds.terminals.push(DemoTerminal {
            id: t.id,
            key: key.expose().to_owned(),
        });
    }
    creds.rest_url = urls.rest.clone();
    creds.gateway_url = urls.gateway.clone();
    creds.mcp_url = urls.mcp.clone();
    std::fs::create_dir_all(data_dir).with_context(|| format!("creating {}", data_dir.display()))?;
    let json = serde_json::to_vec_pretty(&creds)?;
    crate::keys::write_private(&path, &json)?;
    Ok((creds, created))
}
