-- Prop-firm rule sets: at most one per (license, terminal), with the
-- tracker's high-water mark (trailing drawdown reference).
CREATE TABLE prop_firm_rules (
    license_id      TEXT    NOT NULL REFERENCES licenses (id),
    terminal_id     TEXT    NOT NULL REFERENCES terminals (id),
    rules           TEXT    NOT NULL,
    high_water_mark REAL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    PRIMARY KEY (license_id, terminal_id)
);
