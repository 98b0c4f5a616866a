//! TLS of the gateway listener: a certificate chain and its private key, read
//! from PEM files once at start-up and turned into a rustls server
//! configuration (aws-lc-rs provider, TLS 1.2 and 1.3).
//!
//! With a [`TlsConfig`] in [`GatewaySettings::tls`](crate::GatewaySettings::tls)
//! the gateway's only listener speaks HTTPS: agents connect to
//! `wss://HOST:PORT/agent/v1`, and the token exchange, dashboard and internal
//! routes are HTTPS as well. Nothing here reads the environment: the
//! binaries name the files (`GATEWAY_TLS_CERT`, `GATEWAY_TLS_KEY`).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Which of the two PEM files an error is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsFile {
    /// The certificate chain (leaf first).
    Certificate,
    /// The private key of the leaf certificate.
    PrivateKey,
}

impl fmt::Display for TlsFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Certificate => "certificate file",
            Self::PrivateKey => "private key file",
        })
    }
}

/// Why a TLS configuration could not be built. Messages name the file, never
/// its content.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read.
    #[error("{file} {}: {source}", path.display())]
    Read {
        /// Which file.
        file: TlsFile,
        /// Its path.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file holds no usable PEM item of the expected kind.
    #[error("{file} {}: {reason}", path.display())]
    Pem {
        /// Which file.
        file: TlsFile,
        /// Its path (empty when built from memory).
        path: PathBuf,
        /// What is wrong, e.g. no `CERTIFICATE` block.
        reason: String,
    },
    /// rustls refused the pair, most often because the key does not belong to
    /// the first certificate of the chain.
    #[error("certificate and private key rejected: {0}")]
    Rejected(#[source] rustls::Error),
    /// A client trusting the certificate chain itself still cannot verify it
    /// for any of the names tried (wrong names, expired, or a CA certificate
    /// used as the server's certificate).
    #[error("the certificate cannot be verified for {names}: {source}")]
    NotVerifiable {
        /// The names tried.
        names: String,
        /// The last verification error.
        source: rustls::Error,
    },
}

impl TlsError {
    /// The file the error is about (`None` when the pair as a whole is refused).
    pub fn file(&self) -> Option<TlsFile> {
        match self {
            Self::Read { file, .. } | Self::Pem { file, .. } => Some(*file),
            Self::Rejected(_) | Self::NotVerifiable { .. } => None,
        }
    }
}

/// A loaded TLS server configuration of the gateway listener. Cheap to clone.
#[derive(Clone)]
pub struct TlsConfig {
    server: Arc<rustls::ServerConfig>,
    chain: Arc<[CertificateDer<'static>]>,
}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConfig")
            .field("certificates", &self.chain.len())
            .finish_non_exhaustive()
    }
}

impl TlsConfig {
    /// Reads the certificate chain (PEM `CERTIFICATE` blocks, leaf first) and
    /// the private key (PEM PKCS#8, PKCS#1 RSA or SEC1 EC) and checks that they
    /// belong together.
    ///
    /// # Errors
    /// A file is missing or unreadable, holds no certificate or key, or the
    /// key does not match the certificate.
    pub fn load(cert_path: &Path, key_path: &Path) -> Result<Self, TlsError> {
        let read = |file, path: &Path| {
            std::fs::read(path).map_err(|source| TlsError::Read {
                file,
                path: path.to_owned(),
                source,
            })
        };
        let cert_pem = read(TlsFile::Certificate, cert_path)?;
        let key_pem = read(TlsFile::PrivateKey, key_path)?;
        Self::build(&cert_pem, cert_path, &key_pem, key_path)
    }

    /// As [`TlsConfig::load`], from PEM bytes in memory.
    ///
    /// # Errors
    /// As [`TlsConfig::load`].
    pub fn from_pem(cert_pem: &[u8], key_pem: &[u8]) -> Result<Self, TlsError> {
        Self::build(cert_pem, Path::new(""), key_pem, Path::new(""))
    }

    fn build(cert_pem: &[u8], cert_path: &Path, key_pem: &[u8], key_path: &Path) -> Result<Self, TlsError> {
        let pem_error = |file, path: &Path, reason: String| TlsError::Pem {
            file,
            path: path.to_owned(),
            reason,
        };
        let chain = CertificateDer::pem_slice_iter(cert_pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| pem_error(TlsFile::Certificate, cert_path, format!("invalid PEM: {e}")))?;
        if chain.is_empty() {
            return Err(pem_error(
                TlsFile::Certificate,
                cert_path,
                "no PEM `CERTIFICATE` block found".into(),
            ));
        }
        let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| {
            pem_error(
                TlsFile::PrivateKey,
                key_path,
                match e {
                    rustls::pki_types::pem::Error::NoItemsFound => {
                        "no PEM private key found (PKCS#8 `PRIVATE KEY`, `RSA PRIVATE KEY` or `EC PRIVATE KEY`)".into()
                    }
                    other => format!("invalid PEM: {other}"),
                },
            )
        })?;
        let kept: Arc<[CertificateDer<'static>]> = chain.clone().into();
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let server = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(TlsError::Rejected)?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(TlsError::Rejected)?;
        Ok(Self {
            server: Arc::new(server),
            chain: kept,
        })
    }

    /// The certificate chain served, leaf first.
    pub fn certificates(&self) -> &[CertificateDer<'static>] {
        &self.chain
    }

    /// The name under which a client on this machine that trusts the served
    /// chain (for example a single node's own simulated terminals and REST
    /// server) can verify the gateway: `host` itself when the certificate is
    /// valid for it, otherwise the first DNS name of the certificate.
    ///
    /// # Errors
    /// The certificate verifies for none of them (no matching name, expired,
    /// or a CA certificate served as the leaf).
    pub fn loopback_name(&self, host: &str) -> Result<String, TlsError> {
        let Some((leaf, intermediates)) = self.chain.split_first() else {
            return Err(TlsError::NotVerifiable {
                names: host.to_owned(),
                source: rustls::Error::NoCertificatesPresented,
            });
        };
        let mut roots = rustls::RootCertStore::empty();
        roots.add_parsable_certificates(self.chain.iter().cloned());
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let verifier = rustls::client::WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
            .build()
            .map_err(|e| TlsError::NotVerifiable {
                names: host.to_owned(),
                source: rustls::Error::General(e.to_string()),
            })?;
        let mut candidates = vec![host.to_owned()];
        if let Ok(cert) = webpki::EndEntityCert::try_from(leaf) {
            candidates.extend(
                cert.valid_dns_names()
                    .filter(|n| !n.starts_with('*'))
                    .map(str::to_owned),
            );
        }
        let now = rustls::pki_types::UnixTime::now();
        let mut last = rustls::Error::NoCertificatesPresented;
        for name in &candidates {
            let Ok(server_name) = rustls::pki_types::ServerName::try_from(name.as_str()) else {
                continue;
            };
            use rustls::client::danger::ServerCertVerifier;
            match verifier.verify_server_cert(leaf, intermediates, &server_name, &[], now) {
                Ok(_) => return Ok(name.clone()),
                Err(e) => last = e,
            }
        }
        Err(TlsError::NotVerifiable {
            names: candidates.join(", "),
            source: last,
        })
    }

    /// The rustls server configuration (ALPN is set by the HTTP server).
    pub fn server_config(&self) -> &rustls::ServerConfig {
        &self.server
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn self_signed(name: &str) -> (String, String) {
        let key = rcgen::KeyPair::generate().unwrap();
        let params = rcgen::CertificateParams::new(vec![name.to_owned()]).unwrap();
        let cert = params.self_signed(&key).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    #[test]
    fn loads_a_matching_pair_from_files() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = self_signed("localhost");
        let (c, k) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
        std::fs::write(&c, cert).unwrap();
        std::fs::write(&k, key).unwrap();
        let tls = TlsConfig::load(&c, &k).unwrap();
        assert_eq!(tls.certificates().len(), 1);
        assert!(format!("{tls:?}").contains("certificates: 1"));
    }

    #[test]
    fn loopback_name_is_the_host_or_a_name_of_the_certificate() {
        let key = rcgen::KeyPair::generate().unwrap();
        let params = rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
        let cert = params.self_signed(&key).unwrap();
        let tls = TlsConfig::from_pem(cert.pem().as_bytes(), key.serialize_pem().as_bytes()).unwrap();
        assert_eq!(tls.loopback_name("127.0.0.1").unwrap(), "127.0.0.1");
        assert_eq!(tls.loopback_name("localhost").unwrap(), "localhost");
        // 10.0.0.1 is not in the certificate: its DNS name is used instead.
        assert_eq!(tls.loopback_name("10.0.0.1").unwrap(), "localhost");

        let (cert, key) = self_signed("gw.example.test");
        let tls = TlsConfig::from_pem(cert.as_bytes(), key.as_bytes()).unwrap();
        assert_eq!(tls.loopback_name("127.0.0.1").unwrap(), "gw.example.test");

        // A self-signed CA certificate served as the leaf cannot be verified.
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let cert = params.self_signed(&key).unwrap();
        let tls = TlsConfig::from_pem(cert.pem().as_bytes(), key.serialize_pem().as_bytes()).unwrap();
        let e = tls.loopback_name("127.0.0.1").unwrap_err();
        assert!(matches!(e, TlsError::NotVerifiable { .. }), "{e}");
    }

    #[test]
    fn errors_name_the_file_and_the_problem() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = self_signed("localhost");
        let (c, k) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
        std::fs::write(&c, &cert).unwrap();
        std::fs::write(&k, &key).unwrap();

        let missing = dir.path().join("missing.pem");
        let e = TlsConfig::load(&missing, &k).unwrap_err();
        assert_eq!(e.file(), Some(TlsFile::Certificate));
        assert!(e.to_string().contains("missing.pem"), "{e}");
        let e = TlsConfig::load(&c, &missing).unwrap_err();
        assert_eq!(e.file(), Some(TlsFile::PrivateKey));

        // The two files swapped: neither holds what it should.
        let e = TlsConfig::load(&k, &c).unwrap_err();
        assert_eq!(e.file(), Some(TlsFile::Certificate));
        assert!(e.to_string().contains("no PEM `CERTIFICATE`"), "{e}");
        let e = TlsConfig::from_pem(cert.as_bytes(), cert.as_bytes()).unwrap_err();
        assert_eq!(e.file(), Some(TlsFile::PrivateKey));
        assert!(e.to_string().contains("no PEM private key"), "{e}");

        // A key of another certificate.
        let (_, other_key) = self_signed("localhost");
        let e = TlsConfig::from_pem(cert.as_bytes(), other_key.as_bytes()).unwrap_err();
        assert_eq!(e.file(), None);
        assert!(matches!(e, TlsError::Rejected(_)), "{e}");
        assert!(
            !e.to_string().contains("PRIVATE KEY-----"),
            "no key material in messages"
        );
    }
}
