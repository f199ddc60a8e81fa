//! The data of accounts: who they are, where they are signed in, their passkeys, and what
//! they keep.

use serde::Serialize;

/// An account.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct User {
    /// Its id.
    #[serde(skip)]
    pub id: String,
    /// Its name (unique, compared without case).
    pub name: String,
    /// May manage the server.
    pub admin: bool,
    /// Seconds since the epoch.
    #[serde(skip)]
    pub created_at: f64,
}

/// A sign-in as it begins: whose, until when, from where and by which way.
#[derive(Clone, Debug, PartialEq)]
pub struct NewSignIn {
    /// The SHA-256 of its token (the token itself is the browser's alone).
    pub token_hash: String,
    /// The account.
    pub user_id: String,
    /// Seconds since the epoch: when it signs in, which is also when its proof was given.
    pub now: f64,
    /// When it ends unless used.
    pub expires_at: f64,
    /// The address it came from.
    pub ip: String,
    /// Its browser's `User-Agent` (shortened).
    pub agent: String,
    /// The passkey it signed in with (`None`: the password).
    pub passkey_id: Option<String>,
}

/// A browser signed in to an account, as Settings lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct SignIn {
    /// Its id: the first 16 hex digits of its token's hash (which tell nothing of the token).
    pub id: String,
    /// When it signed in.
    pub created_at: f64,
    /// When it was last seen (within the hour: the expiry slides at most that often).
    pub last_seen_at: f64,
    /// The address it signed in from.
    pub ip: String,
    /// Its browser's `User-Agent`.
    pub agent: String,
    /// The name of the passkey it signed in with (`None`: the password, or a passkey since
    /// removed, which ends it).
    pub passkey: Option<String>,
    /// The id of that passkey.
    pub passkey_id: Option<String>,
}

/// What an account keeps, in bytes (see `--max-storage-per-user`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Storage {
    /// Its conversations' journals (those in the bin too, until they are purged).
    pub conversations: u64,
    /// The snapshots its share links keep.
    pub shares: u64,
    /// Its attached files (their bytes, once per content).
    pub files: u64,
}

impl Storage {
    /// All of it.
    pub fn total(&self) -> u64 {
        self.conversations + self.shares + self.files
    }
}

/// A passkey of an account, as kept.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredPasskey {
    /// Its id (how Settings names it).
    pub id: String,
    /// The account.
    pub user_id: String,
    /// The credential's id (as webauthn-rs writes it).
    pub credential_id: String,
    /// What its owner calls it.
    pub name: String,
    /// The credential (webauthn-rs's JSON).
    pub passkey: String,
    /// Seconds since the epoch.
    pub created_at: f64,
    /// When it last signed in.
    pub last_used_at: Option<f64>,
}
