//! The plans SQLite makes of the hot queries (those `report`, `watch`, `export`, the scrape
//! endpoint and the alert task run on every pass), asserted: each finds its rows through an
//! index bounded by the window, never by scanning what an instance ever stored (issue 38), and
//! the `event_counts` triggers keep the scrape's counts equal to the events stored.

use super::base::{
    CHUNKS_IN_WINDOW, GAPS_IN_WINDOW, SAMPLE_AT_OR_AFTER_SEQ, SAMPLE_SEQ_BOUNDS, SAMPLES_IN_SEQS,
    Store,
};
use super::export_cursor::{EVENT_COUNTS, NEWEST_CHUNKS, NEWEST_RAW_SAMPLE};
use super::read::{
    EVENTS_COUNT_IN_WINDOW, EVENTS_IN_WINDOW, LAST_OF_KIND_BEFORE, SAMPLES_COUNT_IN_SEQS,
};
use super::tiers::ROWS_IN_WINDOW;

/// The lines of `EXPLAIN QUERY PLAN sql` on `store`'s connection.
fn plan(store: &Store, sql: &str) -> Vec<String> {
    let mut stmt = store
        .reader
        .conn
        .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
        .unwrap();
    // (Unbound parameters are NULL: the plan does not depend on them.)
    let mut rows = stmt.raw_query();
    let mut out = Vec::new();
    while let Some(r) = rows.next().unwrap() {
        out.push(r.get::<_, String>(3).unwrap());
    }
    out
}

#[test]
fn every_hot_query_is_bounded_by_an_index() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("plans.db")).unwrap();
    // (query, table, index whose search bounds it: by the window, a seq range or a limit)
    let hot: &[(&str, &str, &str)] = &[
        (
            EVENTS_IN_WINDOW,
            "events",
            "INDEX events_by_time (instance=? AND time_ms>? AND time_ms<?)",
        ),
        (
            EVENTS_COUNT_IN_WINDOW,
            "events",
            "COVERING INDEX events_by_time (instance=? AND time_ms>? AND time_ms<?)",
        ),
        (
            LAST_OF_KIND_BEFORE,
            "events",
            "INDEX events_by_kind (instance=? AND kind=? AND time_ms<?)",
        ),
        (
            CHUNKS_IN_WINDOW,
            "sample_chunks",
            "INDEX sample_chunks_by_time (instance=? AND last_ms>? AND last_ms<?)",
        ),
        (
            ROWS_IN_WINDOW,
            "rollups",
            "INDEX rollups_by_last (instance=? AND step_ms=? AND last_ms>? AND last_ms<?)",
        ),
        (
            SAMPLES_IN_SEQS,
            "samples",
            "PRIMARY KEY (instance=? AND seq>? AND seq<?)",
        ),
        (
            SAMPLES_COUNT_IN_SEQS,
            "samples",
            "PRIMARY KEY (instance=? AND seq>? AND seq<?)",
        ),
        (
            SAMPLE_AT_OR_AFTER_SEQ,
            "samples",
            "PRIMARY KEY (instance=? AND seq>?)",
        ),
        // (Raw rows are the open chunk only: at most one chunk window of an instance.)
        (SAMPLE_SEQ_BOUNDS, "samples", "PRIMARY KEY (instance=?)"),
        (NEWEST_RAW_SAMPLE, "samples", "PRIMARY KEY (instance=?)"),
        (
            NEWEST_CHUNKS,
            "sample_chunks",
            "INDEX sqlite_autoindex_sample_chunks_1 (instance=?)",
        ),
        (GAPS_IN_WINDOW, "g", "INDEX gaps_time (to_ms>?)"),
    ];
    for &(sql, table, index) in hot {
        let lines = plan(&store, sql);
        let search = format!("SEARCH {table} USING {index}");
        assert!(
            lines.contains(&search),
            "{sql}\nplan: {lines:?}\nwanted: {search}"
        );
        assert!(
            !lines
                .iter()
                .any(|l| l.starts_with(&format!("SCAN {table}"))),
            "{sql} scans {table}: {lines:?}"
        );
    }
    // The scrape's counts: one row per instance and kind, never the events themselves.
    let lines = plan(&store, EVENT_COUNTS);
    assert!(
        !lines.iter().any(|l| l.contains("events")),
        "{EVENT_COUNTS} reads events: {lines:?}"
    );
}

/// (instance, kind, events)
type Counted = (i64, String, i64);

#[test]
fn event_counts_follow_every_insert_and_delete_and_the_migration_counts_the_old_rows() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open_at_schema(&dir.path().join("counts.db"), 7).unwrap();
    let insert = |s: &Store, instance: i64, seq: i64, kind: &str| {
        s.reader
            .conn
            .execute(
                "INSERT OR IGNORE INTO events(instance, seq, time_ms, kind, body)
                 VALUES (?1, ?2, ?2 * 1000, ?3, x'00')",
                rusqlite::params![instance, seq, kind],
            )
            .unwrap();
    };
    for seq in 1..=50 {
        insert(
            &store,
            1 + seq % 2,
            seq,
            ["process_exit", "process_start", "shaping"][seq as usize % 3],
        );
    }
    store.migrate_to(8).unwrap();
    let counts = |s: &Store| -> (Vec<Counted>, Vec<Counted>) {
        let q = |sql: &str| {
            let mut stmt = s.reader.conn.prepare(sql).unwrap();
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .unwrap()
                .collect::<Result<Vec<_>, _>>()
                .unwrap()
        };
        (
            q("SELECT instance, kind, n FROM event_counts WHERE n > 0 ORDER BY 1, 2"),
            q("SELECT instance, kind, COUNT(*) FROM events GROUP BY 1, 2 ORDER BY 1, 2"),
        )
    };
    let (kept, counted) = counts(&store);
    assert_eq!(kept.len(), 6, "{kept:?}");
    assert_eq!(kept, counted);
    // A duplicate is ignored and not counted; new rows and a new kind are.
    insert(&store, 1, 2, "process_exit");
    for seq in 51..=60 {
        insert(&store, 3, seq, "open_files");
    }
    let (kept, counted) = counts(&store);
    assert_eq!(kept.iter().map(|k| k.2).sum::<i64>(), 60);
    assert_eq!(kept, counted);
    // Retention's deletes are subtracted.
    store
        .reader
        .conn
        .execute("DELETE FROM events WHERE time_ms < 30000", [])
        .unwrap();
    let (kept, counted) = counts(&store);
    assert_eq!(kept.iter().map(|k| k.2).sum::<i64>(), 31);
    assert_eq!(kept, counted);
}
