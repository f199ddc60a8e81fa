//! How the database's writes fare, for `/healthz` and `/metrics`: when the journal last
//! committed, when it last failed and why (a full disk, a database out of reach), and how
//! many failures of each kind there were.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::series::Counters;

/// Why a write failed, as a label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// The disk is full.
    DiskFull,
    /// The database could not be reached.
    Unreachable,
    /// Anything else.
    Other,
}

impl Failure {
    fn label(self) -> &'static str {
        match self {
            Failure::DiskFull => "disk_full",
            Failure::Unreachable => "unreachable",
            Failure::Other => "other",
        }
    }
}

/// The journal's writes: the last success, the last failure and its kind.
pub struct StoreHealth {
    /// Milliseconds since the epoch of the last commit that worked (0: none yet).
    last_ok: AtomicU64,
    /// Milliseconds since the epoch of the last commit that failed (0: none yet).
    last_failed: AtomicU64,
    /// The last failure was a full disk.
    disk_full: AtomicBool,
    /// Failures, by kind.
    pub failures: Counters,
}

impl Default for StoreHealth {
    fn default() -> Self {
        StoreHealth {
            last_ok: AtomicU64::new(0),
            last_failed: AtomicU64::new(0),
            disk_full: AtomicBool::new(false),
            failures: Counters::new(
                "anchorage_store_failures_total",
                "Journal transactions that failed, by why (disk_full, unreachable, other).",
                &["kind"],
            ),
        }
    }
}

/// What `/healthz` says of the store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Said {
    /// Its last write worked (or none was made yet).
    Ok,
    /// Its last write failed because the disk is full.
    DiskFull,
    /// Its last write failed otherwise.
    Failing,
}

fn millis() -> u64 {
    (crate::clock::now() * 1000.0) as u64
}

impl StoreHealth {
    /// A commit worked.
    pub fn ok(&self) {
        self.last_ok.store(millis(), Ordering::Relaxed);
    }

    /// A commit failed, for `why`.
    pub fn failed(&self, why: Failure) {
        self.disk_full
            .store(why == Failure::DiskFull, Ordering::Relaxed);
        self.last_failed.store(millis(), Ordering::Relaxed);
        self.failures.inc(&[why.label()]);
    }

    /// How the store is, as of its last write.
    pub fn said(&self) -> Said {
        let failed = self.last_failed.load(Ordering::Relaxed);
        if failed == 0 || self.last_ok.load(Ordering::Relaxed) > failed {
            Said::Ok
        } else if self.disk_full.load(Ordering::Relaxed) {
            Said::DiskFull
        } else {
            Said::Failing
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_write_says_how_the_store_is() {
        let health = StoreHealth::default();
        assert_eq!(health.said(), Said::Ok);
        health.failed(Failure::DiskFull);
        assert_eq!(health.said(), Said::DiskFull);
        health.failed(Failure::Other);
        assert_eq!(health.said(), Said::Failing);
        std::thread::sleep(std::time::Duration::from_millis(2));
        health.ok();
        assert_eq!(health.said(), Said::Ok);
        let mut text = String::new();
        health.failures.write(&mut text);
        assert!(
            text.contains("anchorage_store_failures_total{kind=\"disk_full\"} 1"),
            "{text}"
        );
    }
}
