//! What one person, or everyone together, may hold at once: follow-ups waiting in a
//! conversation, turns running, event streams open, uploads in progress. Past a limit the
//! answer is a 429 (this person) or a 503 (the server) with a JSON error saying which limit
//! and how to go on.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The largest message accepted, in bytes (413 beyond).
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// The largest conversation an import (or a copy) takes, as JSON Lines bytes (413 beyond).
pub const MAX_IMPORT_BYTES: usize = 8 * 1024 * 1024;

/// Imports and copies one account may have going at once (429 past it).
pub const MAX_TRANSFERS_PER_USER: usize = 2;
/// Imports and copies the server has going at once (503 past it): each holds up to
/// [`MAX_IMPORT_BYTES`] of text and a chunk of it parsed (`transfer::CHUNK_BYTES`).
pub const MAX_TRANSFERS: usize = 4;

/// The limits in force (flags of the same names; see the README).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Follow-ups waiting per conversation.
    pub max_queued: usize,
    /// Turns running at once per account (in open mode: for everyone together).
    pub max_runs_per_user: u64,
    /// Event streams open at once per account.
    pub max_streams_per_user: usize,
    /// Event streams open at once on the server.
    pub max_streams: usize,
    /// The largest file one may attach, in bytes.
    pub max_attachment_bytes: u64,
    /// Uploads one account may have in progress at once.
    pub max_uploads_per_user: usize,
    /// What one account's attached files may take in all, in bytes.
    pub max_attachment_storage: u64,
    /// What one account may keep in all (conversations, shares' snapshots, files), in bytes.
    pub max_storage_per_user: u64,
    /// How long the password (or a passkey) given counts as a fresh proof.
    pub fresh_proof: Duration,
    /// How long an import's file may take to arrive (it holds a transfer's place meanwhile).
    pub import_wait: Duration,
    /// How long a connection may take to send a request's headers.
    pub header_timeout: Duration,
    /// Connections open at once on the server.
    pub max_connections: usize,
    /// Connections open at once from one address (loopback, a proxy's, is not held to it).
    pub max_connections_per_address: usize,
}

/// The limits when no flag says otherwise: the one place their defaults are written (the
/// flags of [`crate::config`] default to these).
pub const DEFAULTS: Limits = Limits {
    max_queued: 20,
    max_runs_per_user: 4,
    max_streams_per_user: 64,
    max_streams: 1024,
    max_attachment_bytes: 10 << 20,
    max_uploads_per_user: 4,
    max_attachment_storage: 1 << 30,
    max_storage_per_user: 2 << 30,
    fresh_proof: Duration::from_secs(300),
    import_wait: Duration::from_secs(60),
    header_timeout: Duration::from_secs(10),
    max_connections: 4096,
    max_connections_per_address: 128,
};

impl Default for Limits {
    fn default() -> Self {
        DEFAULTS
    }
}

/// Counts what is held at once (open streams, uploads in progress, connections), per holder
/// and in total; a [`Permit`] frees its place when dropped.
#[derive(Debug, Default)]
pub struct Gate {
    open: Mutex<(usize, HashMap<String, usize>)>,
}

/// Event streams: per account (`max_streams_per_user`) and on the server (`max_streams`).
pub type StreamGate = Gate;

/// One place taken at a [`Gate`]; dropping it frees the place.
#[derive(Debug)]
pub struct Permit {
    gate: Arc<Gate>,
    holder: String,
}

/// Whose limit a refusal met: the asker's own (a 429 at the edge) or the server's (a 503).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Whose {
    /// The asking account holds its share.
    Account,
    /// Everyone together holds the server's share.
    Server,
}

/// A limit that refused, in words for the person asking (the routes answer it as JSON).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    /// The flag that sets the limit (`max_streams`, …).
    pub limit: &'static str,
    /// Whose limit it is.
    pub whose: Whose,
    /// What happened and how to go on.
    pub message: String,
}

/// Why a [`Gate`] refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Full {
    /// The holder holds `mine`, its limit.
    Mine(usize),
    /// Everyone together holds the total limit.
    All,
}

impl Gate {
    fn lock(&self) -> std::sync::MutexGuard<'_, (usize, HashMap<String, usize>)> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A place for one more of `holder`'s, at most `mine` each and `all` in total.
    pub fn take(self: &Arc<Self>, holder: &str, mine: usize, all: usize) -> Result<Permit, Full> {
        let mut open = self.lock();
        // The holder's own limit first: what it can do something about.
        let held = open.1.get(holder).copied().unwrap_or(0);
        if held >= mine {
            return Err(Full::Mine(held));
        }
        if open.0 >= all {
            return Err(Full::All);
        }
        open.0 += 1;
        *open.1.entry(holder.to_owned()).or_default() += 1;
        Ok(Permit {
            gate: Arc::clone(self),
            holder: holder.to_owned(),
        })
    }

    /// A place for one more stream of `owner` (`""` in open mode), or which limit refused.
    pub fn acquire(self: &Arc<Self>, owner: &str, limits: &Limits) -> Result<Permit, Refused> {
        self.take(owner, limits.max_streams_per_user, limits.max_streams)
            .map_err(|full| match full {
                Full::All => Refused {
                    limit: "max_streams",
                    whose: Whose::Server,
                    message: format!(
                        "the server has {} event streams open, its limit; try again shortly",
                        limits.max_streams
                    ),
                },
                Full::Mine(mine) => Refused {
                    limit: "max_streams_per_user",
                    whose: Whose::Account,
                    message: format!(
                        "you have {mine} event streams open, the limit; close a tab or two and \
                         try again"
                    ),
                },
            })
    }

    /// A place for one more upload of `owner` (`""` in open mode), or the refusal.
    pub fn upload(self: &Arc<Self>, owner: &str, limits: &Limits) -> Result<Permit, Refused> {
        self.take(owner, limits.max_uploads_per_user, usize::MAX)
            .map_err(|_| Refused {
                limit: "max_uploads_per_user",
                whose: Whose::Account,
                message: format!(
                    "{} of your files are uploading, the most at once: wait for one to finish",
                    limits.max_uploads_per_user
                ),
            })
    }

    /// A place for one more import or copy of `owner` (`""` in open mode), or the refusal.
    pub fn transfer(self: &Arc<Self>, owner: &str) -> Result<Permit, Refused> {
        self.take(owner, MAX_TRANSFERS_PER_USER, MAX_TRANSFERS)
            .map_err(|full| match full {
                Full::Mine(mine) => Refused {
                    limit: "max_transfers_per_user",
                    whose: Whose::Account,
                    message: format!(
                        "{mine} of your imports or copies are in progress, the most at once: \
                         wait for one to finish"
                    ),
                },
                Full::All => Refused {
                    limit: "max_transfers",
                    whose: Whose::Server,
                    message: format!(
                        "the server is writing {MAX_TRANSFERS} imports or copies, the most at \
                         once: try again shortly"
                    ),
                },
            })
    }

    /// Places held now, in total.
    pub fn open(&self) -> usize {
        self.lock().0
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut open = self.gate.lock();
        open.0 = open.0.saturating_sub(1);
        if let Some(n) = open.1.get_mut(&self.holder) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.1.remove(&self.holder);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_default_to_these_limits() {
        assert_eq!(crate::Config::defaults().limits(), DEFAULTS);
    }

    #[test]
    fn streams_are_counted_per_owner_and_in_total_and_freed_on_drop() {
        let gate = Arc::new(StreamGate::default());
        let limits = Limits {
            max_streams_per_user: 2,
            max_streams: 3,
            ..Limits::default()
        };
        let a1 = gate.acquire("a", &limits).unwrap();
        let _a2 = gate.acquire("a", &limits).unwrap();
        let refused = gate.acquire("a", &limits).unwrap_err();
        assert_eq!(
            (refused.whose, refused.limit),
            (Whose::Account, "max_streams_per_user")
        );
        let _b1 = gate.acquire("b", &limits).unwrap();
        let full = gate.acquire("c", &limits).unwrap_err();
        assert_eq!((full.whose, full.limit), (Whose::Server, "max_streams"));
        drop(a1);
        assert_eq!(gate.open(), 2);
        let _c1 = gate.acquire("c", &limits).unwrap();
        assert_eq!(gate.open(), 3);
    }
}
