//! TLS of the agent's `wss://` connection: the system's root certificates plus
//! an optional CA file (PEM), for gateways with a self-signed or private-CA
//! certificate. rustls with the aws-lc-rs provider.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// Why the agent's TLS configuration could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The CA file could not be read.
    #[error("CA file {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The CA file holds no usable certificate.
    #[error("CA file {}: {reason}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Neither the system nor the CA file gave a trusted certificate.
    #[error("no trusted root certificate: the system has none and no CA file was given")]
    NoRoots,
    /// rustls refused the configuration.
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
}

/// The certificates of a PEM file, at least one.
///
/// # Errors
/// The file cannot be read, is not PEM, or holds no `CERTIFICATE` block.
pub fn read_ca_file(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_owned(),
        source,
    })?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Invalid {
            path: path.to_owned(),
            reason: format!("invalid PEM: {e}"),
        })?;
    if certs.is_empty() {
        return Err(TlsError::Invalid {
            path: path.to_owned(),
            reason: "no PEM `CERTIFICATE` block found".into(),
        });
    }
    Ok(certs)
}

/// A client configuration trusting the system's roots and, when given, the
/// certificates of `ca_file` (every one of them must be a valid trust anchor).
///
/// # Errors
/// The CA file is unusable, or no root at all is available.
pub fn client_config(ca_file: Option<&Path>) -> Result<rustls::ClientConfig, TlsError> {
    let mut roots = rustls::RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    if !native.errors.is_empty() {
        tracing::debug!(
            errors = native.errors.len(),
            "some system root certificates could not be loaded"
        );
    }
    roots.add_parsable_certificates(native.certs);
    if let Some(path) = ca_file {
        for cert in read_ca_file(path)? {
            roots.add(cert).map_err(|e| TlsError::Invalid {
                path: path.to_owned(),
                reason: format!("not a usable trust anchor: {e}"),
            })?;
        }
    }
    if roots.is_empty() {
        return Err(TlsError::NoRoots);
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// The connector of a `wss://` URL (`None` for `ws://`, which needs none).
pub(crate) fn connector_for(
    url: &str,
    ca_file: Option<&Path>,
) -> Result<Option<tokio_tungstenite::Connector>, TlsError> {
    let secure = url.get(..6).is_some_and(|scheme| scheme.eq_ignore_ascii_case("wss://"));
    if !secure {
        return Ok(None);
    }
    let config = client_config(ca_file)?;
    Ok(Some(tokio_tungstenite::Connector::Rustls(Arc::new(config))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ca_file_errors_are_clear() {
        let dir = std::env::temp_dir().join(format!("tradeterm-sim-tls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing.pem");
        let e = client_config(Some(&missing)).unwrap_err();
        assert!(e.to_string().contains("missing.pem"), "{e}");
        let not_pem = dir.join("not.pem");
        std::fs::write(&not_pem, "hello").unwrap();
        let e = client_config(Some(&not_pem)).unwrap_err();
        assert!(e.to_string().contains("no PEM `CERTIFICATE`"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn only_wss_gets_a_connector() {
        let dir = std::env::temp_dir().join(format!("tradeterm-sim-tls-ca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let ca = dir.join("ca.pem");
        std::fs::write(&ca, cert.pem()).unwrap();
        assert!(connector_for("ws://127.0.0.1:1/agent/v1", Some(&ca)).unwrap().is_none());
        assert!(connector_for("http://127.0.0.1:1", None).unwrap().is_none());
        assert!(matches!(
            connector_for("WSS://localhost/agent/v1", Some(&ca)),
            Ok(Some(tokio_tungstenite::Connector::Rustls(_)))
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
