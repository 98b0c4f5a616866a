-- Equity guards: at most one per (license, terminal, source), where source is
-- `user` (set_equity_guard) or `prop_firm` (installed by the prop-firm rule
-- set). `state` is the guard's evaluation state (high-water mark, day anchor,
-- latched rules, breach records) as JSON; `version` rises on every write and
-- makes state updates compare-and-swap.
CREATE TABLE equity_guards (
    license_id  TEXT    NOT NULL REFERENCES licenses (id),
    terminal_id TEXT    NOT NULL REFERENCES terminals (id),
    source      TEXT    NOT NULL,
    rules       TEXT    NOT NULL,
    state       TEXT    NOT NULL,
    version     INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    PRIMARY KEY (license_id, terminal_id, source)
);
