//! Terminal keys for a swarm, created through the gateway's management API
//! (`POST /api/dashboard/terminals` and `POST /api/dashboard/api-keys`,
//! authenticated with the license's master key), many requests in flight.
//! This is the documented path an operator's script would use; the simulator
//! links no store, so there is no shortcut into the database.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Requests in flight while creating terminals.
const IN_FLIGHT: usize = 16;

/// One terminal created for the swarm.
#[derive(Clone, Serialize, Deserialize)]
pub struct ProvisionedTerminal {
    /// Terminal id.
    pub id: String,
    /// Its terminal key (a secret).
    pub key: String,
}

impl std::fmt::Debug for ProvisionedTerminal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProvisionedTerminal")
            .field("id", &self.id)
            .field("key", &"<redacted>")
            .finish()
    }
}

/// What a swarm needs: the license, a REST API key and the terminals.
/// Written to the keys file (mode 0600) by `tradeterm-sim provision`.
#[derive(Clone, Serialize, Deserialize)]
pub struct Provisioned {
    /// License owning everything.
    pub license_id: String,
    /// A REST API key of the license (a secret).
    pub api_key: String,
    /// The terminals, in creation order.
    pub terminals: Vec<ProvisionedTerminal>,
}

impl std::fmt::Debug for Provisioned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provisioned")
            .field("license_id", &self.license_id)
            .field("api_key", &"<redacted>")
            .field("terminals", &self.terminals.len())
            .finish()
    }
}

/// Creates `count` terminals named `{prefix}-{i}` and one REST API key on
/// the license of `master_key`, through the gateway at `base`
/// (`http://127.0.0.1:8081`).
///
/// # Errors
/// The gateway refused a request or could not be reached.
pub async fn provision(base: &str, master_key: &str, count: usize, prefix: &str) -> Result<Provisioned, String> {
    let base = base.trim_end_matches('/').to_owned();
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| e.to_string())?;
    let api = post(
        &http,
        &format!("{base}/api/dashboard/api-keys"),
        master_key,
        json!({ "label": prefix }),
    )
    .await?;
    let api_key = str_at(&api, "/data/api_key")?;
    let license_id = str_at(&api, "/data/key/license_id")?;
    let shared = Arc::new((http, base, master_key.to_owned(), prefix.to_owned()));
    let mut terminals = vec![None; count];
    let mut tasks = tokio::task::JoinSet::new();
    let mut next = 0usize;
    let mut done = 0usize;
    while done < count {
        while next < count && tasks.len() < IN_FLIGHT {
            let s = shared.clone();
            let i = next;
            tasks.spawn(async move {
                let (http, base, master, prefix) = &*s;
                let body = json!({ "name": format!("{prefix}-{i}") });
                let created = post(http, &format!("{base}/api/dashboard/terminals"), master, body).await?;
                Ok::<_, String>((
                    i,
                    ProvisionedTerminal {
                        id: str_at(&created, "/data/terminal/id")?,
                        key: str_at(&created, "/data/terminal_key")?,
                    },
                ))
            });
            next += 1;
        }
        match tasks.join_next().await {
            Some(Ok(Ok((i, t)))) => {
                terminals[i] = Some(t);
                done += 1;
            }
            Some(Ok(Err(e))) => return Err(e),
            Some(Err(e)) => return Err(format!("provisioning task failed: {e}")),
            None => break,
        }
    }
    Ok(Provisioned {
        license_id,
        api_key,
        terminals: terminals.into_iter().flatten().collect(),
    })
}

async fn post(http: &reqwest::Client, url: &str, master_key: &str, body: Value) -> Result<Value, String> {
    let resp = http
        .post(url)
        .bearer_auth(master_key)
        .json(&body)
        .send()
        .await
        .map_err(|e| format!("POST {url}: {e}"))?;
    let status = resp.status();
    let text = resp.text().await.map_err(|e| format!("POST {url}: {e}"))?;
    if !status.is_success() {
        return Err(format!(
            "POST {url}: status {status}: {}",
            text.chars().take(300).collect::<String>()
        ));
    }
    serde_json::from_str(&text).map_err(|e| format!("POST {url}: bad JSON: {e}"))
}

fn str_at(v: &Value, pointer: &str) -> Result<String, String> {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| format!("the answer has no `{pointer}`"))
}
