//! The store the replicas share: an SQLite file holding the keys and the newest fencing token
//! any writer used. A write with an older token is rejected inside the same transaction that
//! would have applied it, so a writer that was paused and resumes can never land a write
//! after its successor's first one (nor after its successor's [`Store::claim`]).
//!
//! The token is the group's generation id, which only grows while Kafka keeps the group. Kafka
//! deletes a group that stayed empty and holds no offsets (checked every
//! `offsets.retention.check.interval.ms`, 10 minutes by default); the group then starts again at
//! generation 1 and this file would fence every writer. Such a restarted group needs a new
//! store file (or the `fence` row deleted), which a writer's failed claim says on stderr.

use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::Serialize;

/// Why the store refused or failed a write.
#[derive(Debug)]
pub enum StoreError {
    /// The write's token is older than the newest the store has seen: its writer was replaced.
    Fenced {
        /// The write's token (a generation id).
        token: i32,
        /// The newest token seen.
        newest: i32,
    },
    /// SQLite failed (the file is unreadable, locked for too long, ...).
    Sqlite(rusqlite::Error),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Fenced { token, newest } => write!(
                f,
                "fenced: token {token} is older than the newest token {newest}; \
                 this writer was replaced"
            ),
            StoreError::Sqlite(e) => write!(f, "the store failed: {e}"),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Fenced { .. } => None,
            StoreError::Sqlite(e) => Some(e),
        }
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::Sqlite(e)
    }
}

/// A stored value and who wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    /// The key.
    pub key: String,
    /// The value.
    pub value: String,
    /// The fencing token (generation id) of the write.
    pub generation: i32,
    /// The stable id of the replica that wrote it.
    pub writer: String,
}

/// One replica's connection to the shared SQLite file.
#[derive(Debug)]
pub struct Store {
    conn: Mutex<Connection>,
}

impl Store {
    /// Opens (creating if needed) the store at `path`. Replicas on one host share the file;
    /// SQLite's file locks serialise their transactions, and a writer waits up to 5 s for
    /// another's lock.
    ///
    /// # Errors
    /// If the file cannot be opened or its tables created.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        let conn = Connection::open(path)?;
        conn.busy_timeout(Duration::from_secs(5))?;
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS fence (
                 id INTEGER PRIMARY KEY CHECK (id = 0),
                 generation INTEGER NOT NULL
             );
             CREATE TABLE IF NOT EXISTS kv (
                 key TEXT PRIMARY KEY,
                 value TEXT NOT NULL,
                 generation INTEGER NOT NULL,
                 writer TEXT NOT NULL
             );",
        )?;
        Ok(Self {
            conn: Mutex::new(conn),
        })
    }

    /// Raises the newest token to `token` without writing a key: a new writer calls it as it
    /// takes over, so that its predecessor's late writes are rejected even before the new
    /// writer's first write.
    ///
    /// # Errors
    /// [`StoreError::Fenced`] if a newer token was seen already, or SQLite's error.
    pub fn claim(&self, token: i32) -> Result<(), StoreError> {
        self.fenced_write(token, None)
    }

    /// Writes `key = value` with `token` on behalf of `writer`, atomically with the token
    /// check.
    ///
    /// # Errors
    /// [`StoreError::Fenced`] if `token` is older than the newest seen (nothing is written),
    /// or SQLite's error.
    pub fn put(&self, token: i32, writer: &str, key: &str, value: &str) -> Result<(), StoreError> {
        self.fenced_write(token, Some((writer, key, value)))
    }

    /// The entry at `key`, if any.
    ///
    /// # Errors
    /// SQLite's error.
    pub fn get(&self, key: &str) -> Result<Option<Entry>, StoreError> {
        let conn = self.conn();
        let entry = conn
            .query_row(
                "SELECT key, value, generation, writer FROM kv WHERE key = ?1",
                [key],
                |row| {
                    Ok(Entry {
                        key: row.get(0)?,
                        value: row.get(1)?,
                        generation: row.get(2)?,
                        writer: row.get(3)?,
                    })
                },
            )
            .optional()?;
        Ok(entry)
    }

    /// The newest token seen, -1 before any write.
    ///
    /// # Errors
    /// SQLite's error.
    pub fn newest_token(&self) -> Result<i32, StoreError> {
        let conn = self.conn();
        let newest = conn
            .query_row("SELECT generation FROM fence WHERE id = 0", [], |row| {
                row.get(0)
            })
            .optional()?;
        Ok(newest.unwrap_or(-1))
    }

    fn fenced_write(
        &self,
        token: i32,
        entry: Option<(&str, &str, &str)>,
    ) -> Result<(), StoreError> {
        let mut conn = self.conn();
        // IMMEDIATE: the write lock is taken before the check, so no other writer can raise
        // the token between the check and the write.
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let newest: i32 = tx
            .query_row("SELECT generation FROM fence WHERE id = 0", [], |row| {
                row.get(0)
            })
            .optional()?
            .unwrap_or(-1);
        if token < newest {
            // Dropping the transaction rolls it back.
            return Err(StoreError::Fenced { token, newest });
        }
        tx.execute(
            "INSERT INTO fence (id, generation) VALUES (0, ?1)
             ON CONFLICT (id) DO UPDATE SET generation = excluded.generation",
            [token],
        )?;
        if let Some((writer, key, value)) = entry {
            tx.execute(
                "INSERT INTO kv (key, value, generation, writer) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value,
                     generation = excluded.generation, writer = excluded.writer",
                params![key, value, token, writer],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, Connection> {
        // A connection whose holder panicked is still a valid connection.
        self.conn.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_store(name: &str) -> (Store, std::path::PathBuf) {
        let path = std::env::temp_dir().join(format!(
            "kroupier-single-writer-{name}-{}.sqlite",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&path);
        (Store::open(&path).expect("open"), path)
    }

    #[test]
    fn a_stale_token_is_rejected_and_writes_nothing() {
        let (store, path) = temp_store("stale");
        store.put(3, "a", "k", "from-a").expect("first writer");
        // A second replica's connection to the same file: the successor claims generation 5.
        let successor = Store::open(&path).expect("open again");
        successor.claim(5).expect("claim");
        match store.put(3, "a", "late", "from-a") {
            Err(StoreError::Fenced { token, newest }) => assert_eq!((token, newest), (3, 5)),
            other => panic!("the stale write was not fenced: {other:?}"),
        }
        assert_eq!(store.get("late").expect("get"), None);
        assert!(matches!(
            store.put(4, "a", "k", "overwrite"),
            Err(StoreError::Fenced { .. })
        ));
        assert_eq!(store.get("k").expect("get").expect("k").value, "from-a");
        successor
            .put(5, "b", "k", "from-b")
            .expect("same token writes");
        assert_eq!(
            store.get("k").expect("get"),
            Some(Entry {
                key: "k".into(),
                value: "from-b".into(),
                generation: 5,
                writer: "b".into(),
            })
        );
        assert_eq!(store.newest_token().expect("newest"), 5);
        assert!(matches!(successor.claim(4), Err(StoreError::Fenced { .. })));
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn an_empty_store_takes_any_token() {
        let (store, path) = temp_store("empty");
        assert_eq!(store.newest_token().expect("newest"), -1);
        assert_eq!(store.get("nothing").expect("get"), None);
        store.put(0, "a", "k", "v").expect("generation 0 writes");
        let _ = std::fs::remove_file(&path);
    }
}
