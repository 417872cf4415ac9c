//! The fleet's history: every test of every run, with the host facts that
//! were in force, in one SQLite file (rusqlite, SQLite bundled). The schema
//! is versioned (`PRAGMA user_version`) and migrated forward on open; a
//! file from a newer wirespeed is refused rather than changed. Queried by
//! pair and time (`wirespeed fleet history`), pruned by age.

use crate::error::{FleetError, Result};
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use wirespeed_types::TestResult;
use wirespeed_types::fleet::{DriftEvent, FleetResults, HistoryRow as Row, HostFacts, LinkTest};
use wirespeed_types::result::CpuUsage;

/// A test as a history row, as [`History::record`] stores it: at the
/// start of its measured window (else `run_started`), with its costs
/// and latency floor.
pub fn row(t: &LinkTest, run_started: f64) -> Row {
    let r = t.result.as_ref();
    let (cpu_per_gbps, loss_ratio) = r.map(costs).unwrap_or_default();
    Row {
        at_unix: r
            .map(|x| x.started_unix)
            .filter(|&x| x > 0.0)
            .unwrap_or(run_started),
        workload: t.workload.clone(),
        client: t.client.clone(),
        server: t.server.clone(),
        client_nic: t.client_nic.clone(),
        server_nic: t.server_nic.clone(),
        throughput_bps: t.throughput_bps,
        transactions_per_s: t.transactions_per_s,
        p50_us: t.p50_us,
        p99_us: t.p99_us,
        error: t.error.clone(),
        cpu_per_gbps,
        loss_ratio,
        min_us: r
            .and_then(|x| x.latency.as_ref())
            .map(|l| l.min_us)
            .filter(|&m| m > 0.0),
        client_idle_pct: r.and_then(|x| idle(&x.local_cpu)),
        server_idle_pct: r.and_then(|x| idle(&x.remote_cpu)),
        retransmits: r.and_then(retransmits),
    }
}

/// Segments both ends of a test retransmitted, where TCP_INFO says.
pub fn retransmits(r: &TestResult) -> Option<u64> {
    let mut seen = false;
    let mut n = 0u64;
    for f in &r.flows {
        for x in [
            f.tcp_info.as_ref().map(|t| t.retransmits),
            f.other_end_retransmits,
        ]
        .into_iter()
        .flatten()
        {
            seen = true;
            n = n.saturating_add(x);
        }
    }
    seen.then_some(n)
}

/// How idle a host's CPUs were over a test's window, % of all of them.
/// None without per-core figures.
pub fn idle(c: &CpuUsage) -> Option<f64> {
    let n = c.per_core_pct.len();
    if n == 0 {
        return None;
    }
    let v = (100.0 - c.per_core_pct.iter().sum::<f64>() / n as f64).clamp(0.0, 100.0);
    v.is_finite().then_some(v)
}

/// A test's CPU per Gbit/s (both sides, cores) and TCP loss ratio
/// (segments both ends retransmitted over segments sent), where it has
/// them.
pub fn costs(r: &TestResult) -> (Option<f64>, Option<f64>) {
    let gbps = r.throughput_bps / 1e9;
    let cores = (r.local_cpu.total_pct + r.remote_cpu.total_pct) / 100.0;
    let cpu = (gbps > 0.0 && cores > 0.0).then(|| cores / gbps);
    let (mut retx, mut segs) = (0.0, 0.0);
    for f in &r.flows {
        if let Some(t) = f.tcp_info.as_ref().filter(|t| t.mss > 0) {
            retx += (t.retransmits + f.other_end_retransmits.unwrap_or(0)) as f64;
            // Each end's segments: a transaction's message is at least
            // one, however small (a 1-byte rr is one segment each way).
            let mss = t.mss as f64;
            let each = |bytes: u64| (bytes as f64 / mss).max(f.transactions as f64);
            segs += if f.other_end_retransmits.is_some() && f.transactions > 0 {
                each(f.client_sent_total) + each(f.server_sent_total)
            } else {
                f.client_sent_total.max(f.server_sent_total) as f64 / mss
            };
        }
    }
    let loss = (segs > 0.0).then(|| (retx / segs).min(1.0));
    (cpu, loss)
}

/// The schema this build writes.
pub const SCHEMA: i64 = 4;

/// Each migration takes the file from the version before it to its own
/// (index + 1).
const MIGRATIONS: &[&str] = &[
    "
CREATE TABLE runs (
    id INTEGER PRIMARY KEY,
    started_unix REAL NOT NULL,
    kind TEXT NOT NULL,
    pattern TEXT NOT NULL
);
CREATE TABLE tests (
    run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    at_unix REAL NOT NULL,
    workload TEXT NOT NULL,
    client TEXT NOT NULL,
    server TEXT NOT NULL,
    client_nic TEXT NOT NULL,
    server_nic TEXT NOT NULL,
    throughput_bps REAL NOT NULL,
    transactions_per_s REAL NOT NULL,
    p50_us REAL,
    p99_us REAL,
    error TEXT
);
CREATE INDEX tests_pair ON tests (client, server, at_unix);
CREATE INDEX tests_time ON tests (at_unix);
CREATE TABLE facts (
    run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    agent TEXT NOT NULL,
    facts TEXT NOT NULL
);
",
    "
ALTER TABLE tests ADD COLUMN cpu_per_gbps REAL;
ALTER TABLE tests ADD COLUMN loss_ratio REAL;
ALTER TABLE tests ADD COLUMN min_us REAL;
CREATE TABLE events (
    at_unix REAL NOT NULL,
    event TEXT NOT NULL
);
CREATE INDEX events_time ON events (at_unix);
",
    "
ALTER TABLE tests ADD COLUMN client_idle_pct REAL;
ALTER TABLE tests ADD COLUMN server_idle_pct REAL;
",
    "
ALTER TABLE tests ADD COLUMN retransmits INTEGER;
",
];

/// What to read back.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// Only tests between these two agents (either direction).
    pub pair: Option<(String, String)>,
    /// Only tests at or after this time, Unix seconds.
    pub since_unix: f64,
    /// Only this workload.
    pub workload: Option<String>,
    /// At most this many rows, the newest (0: all).
    pub limit: usize,
}

/// An open history file.
pub struct History {
    db: Connection,
}

/// Held by the one watcher that writes a history file: an exclusive
/// advisory lock on `FILE.watch.lock`, released when dropped (or when the
/// process dies). `fleet history` reads without it.
#[derive(Debug)]
pub struct WatchLock(#[allow(dead_code)] std::fs::File);

/// Takes the watcher's lock on the history at `path`; a second watcher
/// on the same file is refused with the lock file's name. The file is
/// created first (0600) so the lock is named after the file itself, not
/// the path given: two watchers naming one file through a symlink or a
/// relative path take the same lock.
pub fn lock_for_watch(path: &Path) -> Result<WatchLock> {
    create_private(path)?;
    let file = std::fs::canonicalize(path)
        .map_err(|e| FleetError::io(format!("resolve {}", path.display()), e))?;
    let mut name = file.as_os_str().to_owned();
    name.push(".watch.lock");
    let lock = std::path::PathBuf::from(name);
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&lock)
        .map_err(|e| FleetError::io(format!("open {}", lock.display()), e))?;
    match f.try_lock() {
        Ok(()) => Ok(WatchLock(f)),
        Err(std::fs::TryLockError::WouldBlock) => Err(FleetError::History(format!(
            "another watcher writes {} (it holds {}): one watcher per history file",
            file.display(),
            lock.display()
        ))),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(FleetError::io(format!("lock {}", lock.display()), e))
        }
    }
}

/// Creates the history file readable by its owner only (it holds the
/// fleet's hosts, addresses and settings) unless it exists; refuses a
/// path that is not a regular file (a device, a directory), which SQLite
/// would write into.
fn create_private(path: &Path) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => return Ok(()),
        Ok(_) => {
            return Err(FleetError::History(format!(
                "{} is not a regular file: give a history file's path",
                path.display()
            )));
        }
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(FleetError::io(format!("stat {}", path.display()), e));
        }
        Err(_) => {}
    }
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(path)
        .map(drop)
        .map_err(|e| FleetError::io(format!("create {}", path.display()), e))
}

/// SQLite's integrity check of the file (every page, every index against
/// its table: 0.35 s for 200,000 tests); the first problems it names.
fn check_integrity(db: &Connection, name: &str) -> Result<()> {
    let damage = db
        .prepare("PRAGMA integrity_check(5)")
        .and_then(|mut st| {
            st.query_map([], |r| r.get::<_, String>(0))?
                .collect::<rusqlite::Result<Vec<String>>>()
        })
        .unwrap_or_else(|e| vec![e.to_string()]);
    if damage.len() == 1 && damage[0] == "ok" {
        return Ok(());
    }
    Err(FleetError::History(format!(
        "{name} is damaged ({}): nothing was read from it or written to it; move it aside (a watcher then starts a new history) or salvage its rows with `sqlite3 {name} .recover`",
        damage.join("; ").replace('\n', " ")
    )))
}

fn sql(what: &str, error: rusqlite::Error) -> FleetError {
    FleetError::Sql {
        what: what.to_string(),
        error: Box::new(error),
    }
}

/// A watcher and a `fleet history` may share the file: wait for a
/// writer rather than fail at once.
fn configure(db: &Connection) -> Result<()> {
    db.busy_timeout(std::time::Duration::from_secs(5))
        .and_then(|_| db.pragma_update(None, "foreign_keys", true))
        .map_err(|e| sql("configure", e))
}

/// The file's schema version; a newer one than this build's is refused.
fn schema_of(db: &Connection, name: &str) -> Result<i64> {
    let version: i64 = db
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(|e| sql(&format!("read the schema version of {name}"), e))?;
    if version > SCHEMA {
        return Err(FleetError::History(format!(
            "{name} has schema {version}, newer than this wirespeed's {SCHEMA}: use the wirespeed that wrote it"
        )));
    }
    Ok(version)
}

impl History {
    /// Opens the file at `path` for writing (created 0600 when missing),
    /// checks its integrity and migrates it to [`SCHEMA`]: the watcher's
    /// and `fleet run --history`'s way in.
    pub fn open(path: &Path) -> Result<History> {
        create_private(path)?;
        let name = path.display().to_string();
        let db = Connection::open(path).map_err(|e| sql(&format!("open {name}"), e))?;
        configure(&db)?;
        check_integrity(&db, &name)?;
        let version = schema_of(&db, &name)?;
        let h = History { db };
        h.migrate(version)?;
        Ok(h)
    }

    /// Opens an existing file read-only, as readers do (`fleet history`):
    /// nothing is created, migrated or written. A file of an older schema
    /// is copied into memory and migrated there; an empty file, or one
    /// that is not a history, is refused.
    pub fn open_read(path: &Path) -> Result<History> {
        let name = path.display().to_string();
        match std::fs::metadata(path) {
            Ok(m) if m.is_file() => {}
            Ok(_) => {
                return Err(FleetError::History(format!(
                    "{name} is not a regular file: give a history file's path"
                )));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(FleetError::History(format!(
                    "no history file {name} (a watcher or `fleet run --history` writes one)"
                )));
            }
            Err(e) => return Err(FleetError::io(format!("stat {name}"), e)),
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let db = Connection::open_with_flags(path, flags)
            .map_err(|e| sql(&format!("open {name}"), e))?;
        configure(&db)?;
        check_integrity(&db, &name)?;
        let version = schema_of(&db, &name)?;
        if version == 0 {
            return Err(FleetError::History(format!(
                "{name} is not a wirespeed history (it has no schema)"
            )));
        }
        if version == SCHEMA {
            return Ok(History { db });
        }
        let mut mem = Connection::open_in_memory().map_err(|e| sql("open", e))?;
        rusqlite::backup::Backup::new(&db, &mut mem)
            .and_then(|b| b.run_to_completion(256, std::time::Duration::ZERO, None))
            .map_err(|e| sql(&format!("copy {name} (schema {version}) to read it"), e))?;
        let h = History { db: mem };
        h.migrate(version)?;
        Ok(h)
    }

    /// A history in memory (tests, dry runs).
    pub fn in_memory() -> Result<History> {
        let db = Connection::open_in_memory().map_err(|e| sql("open", e))?;
        configure(&db)?;
        let h = History { db };
        h.migrate(0)?;
        Ok(h)
    }

    fn migrate(&self, from: i64) -> Result<()> {
        for (i, step) in MIGRATIONS.iter().enumerate().skip(from as usize) {
            let to = i as i64 + 1;
            let batch = format!("BEGIN; {step} PRAGMA user_version = {to}; COMMIT;");
            self.db
                .execute_batch(&batch)
                .map_err(|e| sql(&format!("migrate to schema {to}"), e))?;
        }
        Ok(())
    }

    /// The file's schema version.
    pub fn schema(&self) -> Result<i64> {
        self.db
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .map_err(|e| sql("read the schema version", e))
    }

    /// Stores a run: its tests and each agent's facts, in one transaction.
    pub fn record(&mut self, kind: &str, r: &FleetResults) -> Result<i64> {
        let tx = self.db.transaction().map_err(|e| sql("begin", e))?;
        tx.execute(
            "INSERT INTO runs (started_unix, kind, pattern) VALUES (?1, ?2, ?3)",
            params![r.started_unix, kind, r.pattern],
        )
        .map_err(|e| sql("store a run", e))?;
        let run = tx.last_insert_rowid();
        {
            let mut ins = tx
                .prepare(
                    "INSERT INTO tests (run, at_unix, workload, client, server, client_nic, server_nic,
                     throughput_bps, transactions_per_s, p50_us, p99_us, error, cpu_per_gbps, loss_ratio, min_us,
                     client_idle_pct, server_idle_pct, retransmits)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
                )
                .map_err(|e| sql("prepare", e))?;
            for t in &r.tests {
                let x = row(t, r.started_unix);
                ins.execute(params![
                    run,
                    x.at_unix,
                    x.workload,
                    x.client,
                    x.server,
                    x.client_nic,
                    x.server_nic,
                    x.throughput_bps,
                    x.transactions_per_s,
                    x.p50_us,
                    x.p99_us,
                    x.error,
                    x.cpu_per_gbps,
                    x.loss_ratio,
                    x.min_us,
                    x.client_idle_pct,
                    x.server_idle_pct,
                    x.retransmits.map(|n| n.min(i64::MAX as u64) as i64)
                ])
                .map_err(|e| sql("store a test", e))?;
            }
            let mut facts = tx
                .prepare("INSERT INTO facts (run, agent, facts) VALUES (?1, ?2, ?3)")
                .map_err(|e| sql("prepare", e))?;
            for a in &r.agents {
                if let Some(f) = &a.facts {
                    let json = serde_json::to_string(f).unwrap_or_default();
                    facts
                        .execute(params![run, a.name, json])
                        .map_err(|e| sql("store facts", e))?;
                }
            }
        }
        tx.commit().map_err(|e| sql("commit", e))?;
        Ok(run)
    }

    /// The tests `q` asks for, oldest first.
    pub fn tests(&self, q: &Query) -> Result<Vec<Row>> {
        let (a, b) = q.pair.clone().unwrap_or_default();
        let limit = if q.limit == 0 { -1 } else { q.limit as i64 };
        let mut st = self
            .db
            .prepare(
                "SELECT at_unix, workload, client, server, client_nic, server_nic, throughput_bps,
                 transactions_per_s, p50_us, p99_us, error, cpu_per_gbps, loss_ratio, min_us,
                 client_idle_pct, server_idle_pct, retransmits FROM (
                   SELECT rowid, * FROM tests WHERE at_unix >= ?1
                   AND (?2 = '' OR (client = ?2 AND server = ?3) OR (client = ?3 AND server = ?2))
                   AND (?4 IS NULL OR workload = ?4)
                   ORDER BY at_unix DESC, rowid DESC LIMIT ?5
                 ) ORDER BY at_unix, rowid",
            )
            .map_err(|e| sql("prepare", e))?;
        let rows = st
            .query_map(params![q.since_unix, a, b, q.workload, limit], |r| {
                Ok(Row {
                    at_unix: r.get(0)?,
                    workload: r.get(1)?,
                    client: r.get(2)?,
                    server: r.get(3)?,
                    client_nic: r.get(4)?,
                    server_nic: r.get(5)?,
                    throughput_bps: r.get(6)?,
                    transactions_per_s: r.get(7)?,
                    p50_us: r.get(8)?,
                    p99_us: r.get(9)?,
                    error: r.get(10)?,
                    cpu_per_gbps: r.get(11)?,
                    loss_ratio: r.get(12)?,
                    min_us: r.get(13)?,
                    client_idle_pct: r.get(14)?,
                    server_idle_pct: r.get(15)?,
                    retransmits: r
                        .get::<_, Option<i64>>(16)?
                        .and_then(|n| u64::try_from(n).ok()),
                })
            })
            .map_err(|e| sql("query", e))?;
        rows.collect::<std::result::Result<_, _>>()
            .map_err(|e| sql("read a row", e))
    }

    /// The facts an agent reported in the newest run at or before `at_unix`.
    pub fn facts_at(&self, agent: &str, at_unix: f64) -> Result<Option<HostFacts>> {
        let json: Option<String> = self
            .db
            .query_row(
                "SELECT f.facts FROM facts f JOIN runs r ON r.id = f.run
                 WHERE f.agent = ?1 AND r.started_unix <= ?2
                 ORDER BY r.started_unix DESC, r.id DESC LIMIT 1",
                params![agent, at_unix],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| sql("read facts", e))?;
        Ok(json.and_then(|j| serde_json::from_str(&j).ok()))
    }

    /// Removes the runs (and their tests and facts) and the drift events
    /// from before `before_unix`; how many runs went.
    pub fn prune(&mut self, before_unix: f64) -> Result<usize> {
        self.db
            .execute(
                "DELETE FROM events WHERE at_unix < ?1",
                params![before_unix],
            )
            .map_err(|e| sql("prune events", e))?;
        self.db
            .execute(
                "DELETE FROM runs WHERE started_unix < ?1",
                params![before_unix],
            )
            .map_err(|e| sql("prune", e))
    }

    /// Stores a drift event.
    pub fn record_event(&mut self, e: &DriftEvent) -> Result<()> {
        let json = serde_json::to_string(e).map_err(|error| FleetError::Encode {
            what: "a drift event".into(),
            error,
        })?;
        self.db
            .execute(
                "INSERT INTO events (at_unix, event) VALUES (?1, ?2)",
                params![e.at_unix, json],
            )
            .map(|_| ())
            .map_err(|e| sql("store an event", e))
    }

    /// The drift events at or after `since_unix`, oldest first (an
    /// unreadable one is skipped).
    pub fn events(&self, since_unix: f64) -> Result<Vec<DriftEvent>> {
        let mut st = self
            .db
            .prepare("SELECT event FROM events WHERE at_unix >= ?1 ORDER BY at_unix, rowid")
            .map_err(|e| sql("prepare", e))?;
        let rows = st
            .query_map(params![since_unix], |r| r.get::<_, String>(0))
            .map_err(|e| sql("query events", e))?;
        let mut out = Vec::new();
        for j in rows {
            let j = j.map_err(|e| sql("read an event", e))?;
            out.extend(serde_json::from_str(&j).ok());
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_watcher_per_history_file() {
        let dir = std::env::temp_dir().join(format!("ws-hlock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let db = dir.join("h.db");
        let first = lock_for_watch(&db).unwrap();
        let e = lock_for_watch(&db).unwrap_err().to_string();
        assert!(
            e.contains("another watcher") && e.contains("h.db.watch.lock"),
            "{e}"
        );
        drop(first);
        let again = lock_for_watch(&db);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(again.is_ok(), "taken again once released");
    }
    use wirespeed_types::fleet::AgentStatus;

    /// A fresh directory for one test, removed when dropped.
    struct Dir(std::path::PathBuf);
    impl Dir {
        fn new(tag: &str) -> Dir {
            let d = std::env::temp_dir().join(format!("ws-h{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(&d).unwrap();
            Dir(d)
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn one_lock_per_file_whatever_path_names_it() {
        let d = Dir::new("link");
        let db = d.0.join("h.db");
        std::os::unix::fs::symlink(&db, d.0.join("alias.db")).unwrap();
        let first = lock_for_watch(&db).unwrap();
        for other in [d.0.join("alias.db"), d.0.join(".").join("h.db")] {
            let e = lock_for_watch(&other).unwrap_err().to_string();
            assert!(e.contains("another watcher"), "{}: {e}", other.display());
        }
        drop(first);
        assert!(lock_for_watch(&d.0.join("alias.db")).is_ok());
    }

    #[test]
    fn a_damaged_file_is_refused_by_writers_and_readers() {
        let d = Dir::new("bad");
        let db = d.0.join("h.db");
        {
            let mut h = History::open(&db).unwrap();
            for i in 0..40 {
                h.record("watch", &run(100.0 + i as f64, 9e9, "1500"))
                    .unwrap();
            }
        }
        let mut bytes = std::fs::read(&db).unwrap();
        assert!(bytes.len() > 8192);
        for b in &mut bytes[4096..4296] {
            *b ^= 0xff;
        }
        std::fs::write(&db, &bytes).unwrap();
        for e in [
            History::open(&db).err().map(|e| e.to_string()),
            History::open_read(&db).err().map(|e| e.to_string()),
        ] {
            let e = e.expect("a damaged file opened");
            assert!(e.contains("is damaged") && e.contains(".recover"), "{e}");
        }
        assert_eq!(
            std::fs::read(&db).unwrap(),
            bytes,
            "a damaged file is left as it was"
        );
    }

    #[test]
    fn a_reader_creates_migrates_and_writes_nothing() {
        let d = Dir::new("ro");
        let empty = d.0.join("empty.db");
        std::fs::write(&empty, b"").unwrap();
        let e = History::open_read(&empty).err().unwrap().to_string();
        assert!(e.contains("not a wirespeed history"), "{e}");
        assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0);
        let none = d.0.join("none.db");
        let e = History::open_read(&none).err().unwrap().to_string();
        assert!(e.contains("no history file"), "{e}");
        assert!(!none.exists());
        let e = History::open_read(&d.0).err().unwrap().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let old = d.0.join("v1.db");
        write_schema_1(&old);
        let before = std::fs::read(&old).unwrap();
        let rows = History::open_read(&old)
            .unwrap()
            .tests(&Query::default())
            .unwrap();
        assert_eq!((rows.len(), rows[0].client_idle_pct), (1, None));
        assert_eq!(std::fs::read(&old).unwrap(), before, "read, not migrated");
    }

    #[test]
    fn a_new_history_is_private_and_a_device_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let d = Dir::new("mode");
        let db = d.0.join("h.db");
        History::open(&db).unwrap();
        let mode = std::fs::metadata(&db).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let _lock = lock_for_watch(&d.0.join("l.db")).unwrap();
        let mode = std::fs::metadata(d.0.join("l.db.watch.lock"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let e = History::open(Path::new("/dev/null"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("not a regular file"), "{e}");
    }

    fn run(at: f64, tput: f64, mtu: &str) -> FleetResults {
        let facts = HostFacts {
            kernel: "6.18".into(),
            settings: [("mtu".to_string(), mtu.to_string())].into(),
            ..HostFacts::default()
        };
        FleetResults {
            started_unix: at,
            pattern: "pairs".into(),
            agents: ["a", "b", "c"]
                .iter()
                .map(|n| AgentStatus {
                    name: n.to_string(),
                    up: true,
                    facts: Some(facts.clone()),
                    ..AgentStatus::default()
                })
                .collect(),
            tests: [("a", "b"), ("c", "a")]
                .iter()
                .map(|(c, s)| LinkTest {
                    workload: "stream".into(),
                    client: c.to_string(),
                    server: s.to_string(),
                    throughput_bps: tput,
                    ..LinkTest::default()
                })
                .collect(),
            ..FleetResults::default()
        }
    }

    #[test]
    fn runs_are_stored_queried_by_pair_and_time_and_pruned() {
        let mut h = History::in_memory().unwrap();
        assert_eq!(h.schema().unwrap(), SCHEMA);
        h.record("run", &run(100.0, 9e9, "9000")).unwrap();
        h.record("watch", &run(200.0, 4e9, "1500")).unwrap();
        let all = h.tests(&Query::default()).unwrap();
        assert_eq!(all.len(), 4);
        let q = Query {
            pair: Some(("b".into(), "a".into())),
            since_unix: 150.0,
            ..Query::default()
        };
        let ab = h.tests(&q).unwrap();
        assert_eq!(ab.len(), 1);
        assert_eq!((ab[0].client.as_str(), ab[0].throughput_bps), ("a", 4e9));
        let newest = h
            .tests(&Query {
                limit: 1,
                ..Query::default()
            })
            .unwrap();
        assert_eq!((newest.len(), newest[0].client.as_str()), (1, "c"));
        let f = h.facts_at("c", 150.0).unwrap().unwrap();
        assert_eq!(f.settings["mtu"], "9000");
        assert_eq!(
            h.facts_at("c", 250.0).unwrap().unwrap().settings["mtu"],
            "1500"
        );
        assert_eq!(h.prune(150.0).unwrap(), 1);
        assert_eq!(h.tests(&Query::default()).unwrap().len(), 2);
        assert!(
            h.facts_at("c", 150.0).unwrap().is_none(),
            "facts pruned with their run"
        );
    }

    #[test]
    fn each_test_keeps_how_idle_both_hosts_were() {
        let c = CpuUsage {
            total_pct: 50.0,
            per_core_pct: vec![90.0, 70.0],
            ..CpuUsage::default()
        };
        assert_eq!(idle(&c), Some(20.0));
        let odd = CpuUsage {
            per_core_pct: vec![f64::NAN],
            ..CpuUsage::default()
        };
        assert_eq!(idle(&odd), None);
        assert_eq!(idle(&CpuUsage::default()), None);
        let mut h = History::in_memory().unwrap();
        let mut r = run(100.0, 9e9, "9000");
        r.tests[0].result = Some(TestResult {
            local_cpu: c,
            remote_cpu: CpuUsage {
                per_core_pct: vec![0.0, 4.0],
                ..CpuUsage::default()
            },
            ..TestResult::default()
        });
        h.record("watch", &r).unwrap();
        let rows = h.tests(&Query::default()).unwrap();
        assert_eq!(
            (rows[0].client_idle_pct, rows[0].server_idle_pct),
            (Some(20.0), Some(98.0))
        );
        assert_eq!(
            (rows[1].client_idle_pct, rows[1].server_idle_pct),
            (None, None)
        );
    }

    /// A schema 1 file with one run of one test at `path`.
    fn write_schema_1(path: &Path) {
        let db = Connection::open(path).unwrap();
        db.execute_batch(&format!("{} PRAGMA user_version = 1;", MIGRATIONS[0]))
            .unwrap();
        db.execute_batch(
            "INSERT INTO runs VALUES (1, 100.0, 'run', 'pairs');
             INSERT INTO tests VALUES (1, 100.0, 'stream', 'a', 'b', '', '', 9e9, 0, NULL, NULL, NULL);",
        )
        .unwrap();
    }

    #[test]
    fn a_schema_1_file_is_migrated_and_keeps_its_tests() {
        let path = std::env::temp_dir().join(format!("ws-history-v1-{}.db", std::process::id()));
        let _ = std::fs::remove_file(&path);
        write_schema_1(&path);
        let mut h = History::open(&path).unwrap();
        assert_eq!(h.schema().unwrap(), SCHEMA);
        let rows = h.tests(&Query::default()).unwrap();
        assert_eq!((rows.len(), rows[0].cpu_per_gbps), (1, None));
        assert_eq!(rows[0].client_idle_pct, None);
        let e = DriftEvent {
            at_unix: 150.0,
            subject: "c".into(),
            ..DriftEvent::default()
        };
        h.record_event(&e).unwrap();
        assert_eq!(h.events(0.0).unwrap(), vec![e]);
        h.prune(200.0).unwrap();
        assert!(h.events(0.0).unwrap().is_empty());
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_file_survives_reopening_and_a_newer_schema_is_refused() {
        let path = std::env::temp_dir().join(format!("ws-history-{}.db", std::process::id()));
        let _ = std::fs::remove_file(&path);
        {
            let mut h = History::open(&path).unwrap();
            h.record("run", &run(100.0, 9e9, "9000")).unwrap();
        }
        assert_eq!(
            History::open(&path)
                .unwrap()
                .tests(&Query::default())
                .unwrap()
                .len(),
            2
        );
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", SCHEMA + 1)
            .unwrap();
        let e = History::open(&path).err().unwrap().to_string();
        assert!(e.contains("newer than this wirespeed"), "{e}");
        std::fs::write(&path, b"not a database at all, just some bytes here").unwrap();
        assert!(History::open(&path).is_err());
        let _ = std::fs::remove_file(&path);
    }
}
