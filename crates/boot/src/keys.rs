//! RS256 key material for the gateway (signing) and the adapters (verifying).
//!
//! Development: when no key paths are configured, a key pair is generated
//! into `DATA_DIR/keys/` on first start (private key mode 0600) and reused.
//! Production: `JWT_PRIVATE_KEY_PATH` (gateway) and `JWT_PUBLIC_KEY_PATH`
//! (every verifier) are required and start-up is refused without them.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use tradeterm_protocol::token::{TokenSigner, TokenVerifier, generate_rsa_pem_pair};

use crate::Settings;

/// Paths of the key pair in use.
#[derive(Debug, Clone)]
pub struct KeyPaths {
    /// Private key PEM (signing).
    pub private: PathBuf,
    /// Public key PEM (verifying).
    pub public: PathBuf,
}

/// Resolves the key paths: configured ones, or (development only) a pair
/// generated under `data_dir/keys` on first use.
pub fn resolve(settings: &Settings, data_dir: &Path) -> anyhow::Result<KeyPaths> {
    match (&settings.jwt_private_key_path, &settings.jwt_public_key_path) {
        (Some(private), Some(public)) => {
            for p in [private, public] {
                if !p.is_file() {
                    bail!("key file {} does not exist", p.display());
                }
            }
            Ok(KeyPaths {
                private: private.clone(),
                public: public.clone(),
            })
        }
        _ if settings.production() => bail!(
            "NODE_ENV=production requires JWT_PRIVATE_KEY_PATH and JWT_PUBLIC_KEY_PATH (RS256 PEM files); \
             refusing to start without them"
        ),
        (Some(_), None) | (None, Some(_)) => {
            bail!("set both JWT_PRIVATE_KEY_PATH and JWT_PUBLIC_KEY_PATH, or neither (development generates a pair)")
        }
        (None, None) => generate_if_missing(&data_dir.join("keys")),
    }
}

fn generate_if_missing(dir: &Path) -> anyhow::Result<KeyPaths> {
    let paths = KeyPaths {
        private: dir.join("jwt-private.pem"),
        public: dir.join("jwt-public.pem"),
    };
    if paths.private.is_file() && paths.public.is_file() {
        return Ok(paths);
    }
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let (private, public) = generate_rsa_pem_pair().context("generating an RS256 key pair")?;
    write_private(&paths.private, private.as_bytes())?;
    fs::write(&paths.public, public).with_context(|| format!("writing {}", paths.public.display()))?;
    tracing::info!(dir = %dir.display(), "generated a development RS256 key pair");
    Ok(paths)
}

/// Writes a file readable only by its owner (mode 0600 on Unix).
pub fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)
            .with_context(|| format!("writing {}", path.display()))?;
        f.write_all(bytes)?;
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(0o600))?;
        Ok(())
    }
    #[cfg(not(unix))]
    {
        fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
    }
}

/// Loads the signer from the private key.
pub fn signer(settings: &Settings, paths: &KeyPaths) -> anyhow::Result<TokenSigner> {
    let pem = fs::read(&paths.private).with_context(|| format!("reading {}", paths.private.display()))?;
    TokenSigner::from_pem(&pem, &settings.jwt_issuer, &settings.jwt_audience)
        .with_context(|| format!("{} is not an RSA private key PEM", paths.private.display()))
}

/// Loads the verifier from the public key.
pub fn verifier(settings: &Settings, paths: &KeyPaths) -> anyhow::Result<TokenVerifier> {
    let pem = fs::read(&paths.public).with_context(|| format!("reading {}", paths.public.display()))?;
    TokenVerifier::from_pem(&pem, &settings.jwt_issuer, &settings.jwt_audience)
        .with_context(|| format!("{} is not an RSA public key PEM", paths.public.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn development_generates_once_and_production_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let dev = Settings::default();
        let a = resolve(&dev, dir.path()).unwrap();
        let first = fs::read(&a.private).unwrap();
        let b = resolve(&dev, dir.path()).unwrap();
        assert_eq!(
            first,
            fs::read(&b.private).unwrap(),
            "the pair is reused, not regenerated"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(fs::metadata(&a.private).unwrap().permissions().mode() & 0o777, 0o600);
        }
        assert!(signer(&dev, &a).is_ok() && verifier(&dev, &a).is_ok());

        let prod = Settings {
            node_env: "production".into(),
            ..Settings::default()
        };
        let err = resolve(&prod, dir.path()).unwrap_err().to_string();
        assert!(err.contains("JWT_PRIVATE_KEY_PATH"), "{err}");
        let prod = Settings {
            node_env: "production".into(),
            jwt_private_key_path: Some(a.private.clone()),
            jwt_public_key_path: Some(a.public.clone()),
            ..Settings::default()
        };
        assert!(resolve(&prod, dir.path()).is_ok());
    }
}
