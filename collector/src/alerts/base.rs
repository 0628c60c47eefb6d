//! What the alert task shares with the store and the rest of the run: its tables and what it
//! shows ([`Shared`]).

use std::sync::Mutex;
use std::sync::atomic::AtomicU64;

/// The alert tables (schema 6): the alerts with their state, and the notifications to deliver
/// per receiver (`delivered_ms` set once delivered; `given_up` after the last attempt).
pub(crate) const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS alerts(
        id INTEGER PRIMARY KEY,
        rule TEXT NOT NULL,
        key TEXT NOT NULL,
        host TEXT,
        state TEXT NOT NULL,
        started_ms INTEGER NOT NULL,
        ended_ms INTEGER,
        sent_ms INTEGER NOT NULL,
        count INTEGER NOT NULL,
        summary TEXT NOT NULL,
        evidence TEXT NOT NULL,
        last_ms INTEGER
     );
     CREATE INDEX IF NOT EXISTS alerts_state ON alerts(state, rule, key);
     CREATE INDEX IF NOT EXISTS alerts_time ON alerts(started_ms);
     CREATE TABLE IF NOT EXISTS alert_outbox(
        id INTEGER PRIMARY KEY,
        alert INTEGER NOT NULL,
        receiver TEXT NOT NULL,
        state TEXT NOT NULL,
        payload TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_ms INTEGER NOT NULL,
        delivered_ms INTEGER,
        error TEXT,
        given_up INTEGER NOT NULL DEFAULT 0
     );
     CREATE INDEX IF NOT EXISTS alert_outbox_due ON alert_outbox(receiver, delivered_ms, id);";

/// What the alert task shows to the rest of the run.
#[derive(Debug, Default)]
pub struct Shared {
    /// The summaries of the firing alerts (for `watch`).
    pub firing: Mutex<Vec<String>>,
    pub evaluations: AtomicU64,
}
