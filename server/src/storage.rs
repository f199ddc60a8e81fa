//! What each account keeps, held to one quota (`--max-storage-per-user`): its conversations'
//! journals, the snapshots its share links keep, and its files. What would add to it (a new
//! turn, an import, a copy, a share link, an upload) first asks for room here; past the quota
//! it is refused (413) until something is deleted. A turn already running is not cut off: a
//! turn is bounded by its own budget (`runtime::io::TurnBudget`).

use crate::store::{Storage, Store, StoreError};

/// An account's storage is full.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Full {
    /// What it keeps now.
    pub used: Storage,
    /// What was to be added.
    pub more: u64,
    /// The quota.
    pub quota: u64,
}

impl std::fmt::Display for Full {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "your storage is full: you keep {} of {} (conversations {}, shared links {}, files \
             {}); delete conversations, links or files to make room",
            app::api::file_size(self.used.total()),
            app::api::file_size(self.quota),
            app::api::file_size(self.used.conversations),
            app::api::file_size(self.used.shares),
            app::api::file_size(self.used.files),
        )
    }
}

/// Why room could not be given.
#[derive(Debug, thiserror::Error)]
pub enum NoRoom {
    /// The account's storage is full.
    #[error("{0}")]
    Full(Full),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What `owner` keeps, if `more` bytes fit beside it within `quota`.
pub async fn room(
    store: &dyn Store,
    owner: Option<&str>,
    quota: u64,
    more: u64,
) -> Result<Storage, NoRoom> {
    let used = store.storage(owner, crate::clock::now()).await?;
    if used.total().saturating_add(more) > quota {
        return Err(NoRoom::Full(Full { used, more, quota }));
    }
    Ok(used)
}
