//! Embedded migrations, one directory per backend.
//!
//! The SQL files are compiled into the binary with `include_str!` and run
//! through sqlx's [`Migrator`], which records applied versions (with a
//! checksum) in `_sqlx_migrations`, so connecting again is a no-op and an
//! edited, already-applied file is reported instead of silently ignored. On
//! PostgreSQL the migrator holds an advisory lock while it runs, so several
//! instances starting together apply each migration once.

use sqlx::SqlStr;
use sqlx::migrate::{Migration, MigrationType, Migrator};

/// One migration file, `NNNN_description.sql`: version, description and SQL.
pub(super) struct Embedded {
    pub(super) version: i64,
    pub(super) description: &'static str,
    pub(super) sql: &'static str,
}

macro_rules! embedded {
    ($backend:literal, $version:literal, $file:literal, $description:literal) => {
        Embedded {
            version: $version,
            description: $description,
            sql: include_str!(concat!("../../migrations/", $backend, "/", $file)),
        }
    };
}

/// SQLite migrations, in order. Every file of `migrations/sqlite` must be
/// listed (a unit test checks it).
pub(super) const SQLITE: &[Embedded] = &[
    embedded!("sqlite", 1, "0001_init.sql", "init"),
    embedded!("sqlite", 2, "0002_prop_firm.sql", "prop_firm"),
    embedded!("sqlite", 3, "0003_guard_and_snapshots.sql", "guard_and_snapshots"),
    embedded!("sqlite", 4, "0004_equity_guards.sql", "equity_guards"),
    embedded!("sqlite", 5, "0005_alerts_and_executions.sql", "alerts_and_executions"),
    embedded!("sqlite", 6, "0006_dashboard_sessions.sql", "dashboard_sessions"),
    embedded!("sqlite", 7, "0007_webhooks.sql", "webhooks"),
    embedded!("sqlite", 8, "0008_managed_orders.sql", "managed_orders"),
    embedded!("sqlite", 9, "0009_audit_log.sql", "audit_log"),
    embedded!("sqlite", 10, "0010_license_settings.sql", "license_settings"),
    embedded!("sqlite", 11, "0011_key_scopes.sql", "key_scopes"),
    embedded!("sqlite", 12, "0012_webhook_bars.sql", "webhook_bars"),
];

/// PostgreSQL migrations, in order. Every file of `migrations/postgres` must
/// be listed (a unit test checks it).
pub(super) const POSTGRES: &[Embedded] = &[
    embedded!("postgres", 1, "0001_init.sql", "init"),
    embedded!("postgres", 2, "0002_prop_firm.sql", "prop_firm"),
    embedded!("postgres", 3, "0003_guard_and_snapshots.sql", "guard_and_snapshots"),
    embedded!("postgres", 4, "0004_equity_guards.sql", "equity_guards"),
    embedded!("postgres", 5, "0005_alerts_and_executions.sql", "alerts_and_executions"),
    embedded!("postgres", 6, "0006_dashboard_sessions.sql", "dashboard_sessions"),
    embedded!("postgres", 7, "0007_webhooks.sql", "webhooks"),
    embedded!("postgres", 8, "0008_managed_orders.sql", "managed_orders"),
    embedded!("postgres", 9, "0009_audit_log.sql", "audit_log"),
    embedded!("postgres", 10, "0010_license_settings.sql", "license_settings"),
    embedded!("postgres", 11, "0011_key_scopes.sql", "key_scopes"),
    embedded!("postgres", 12, "0012_webhook_bars.sql", "webhook_bars"),
];

/// A migrator over embedded migrations.
pub(super) fn migrator(files: &[Embedded]) -> Migrator {
    Migrator::with_migrations(
        files
            .iter()
            .map(|m| {
                Migration::new(
                    m.version,
                    m.description.into(),
                    MigrationType::Simple,
                    SqlStr::from_static(m.sql),
                    false,
                )
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed_files(dir: &str) -> Vec<String> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("migrations")
            .join(dir);
        let mut names: Vec<String> = std::fs::read_dir(path)
            .expect("migrations directory")
            .map(|e| e.expect("dir entry").file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".sql"))
            .collect();
        names.sort();
        names
    }

    #[test]
    fn every_migration_file_is_embedded_in_order() {
        for (dir, files) in [("sqlite", SQLITE), ("postgres", POSTGRES)] {
            let embedded: Vec<String> = files
                .iter()
                .map(|m| format!("{:04}_{}.sql", m.version, m.description))
                .collect();
            assert_eq!(
                listed_files(dir),
                embedded,
                "migrations/{dir} and the embedded list differ"
            );
            for (i, m) in files.iter().enumerate() {
                assert_eq!(m.version, i as i64 + 1, "versions are 1, 2, ... in order");
            }
        }
    }

    #[test]
    fn both_backends_have_the_same_versions() {
        let v = |files: &[Embedded]| files.iter().map(|m| (m.version, m.description)).collect::<Vec<_>>();
        assert_eq!(v(SQLITE), v(POSTGRES));
    }

    #[test]
    fn migrator_holds_all_versions() {
        assert_eq!(migrator(SQLITE).iter().count(), SQLITE.len());
    }
}
