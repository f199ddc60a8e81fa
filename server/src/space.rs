//! The data directory's free space, looked at when the server starts: a disk nearly full
//! is said before it stops turns (see README, "When the disk is full").

use std::path::Path;

/// Bytes free for the server on the filesystem that holds `path`, if it can be read.
pub fn free_bytes(path: &Path) -> Option<u64> {
    let stat = rustix::fs::statvfs(path).ok()?;
    Some(stat.f_bavail.saturating_mul(stat.f_frsize))
}

/// What to warn of, when `path` has less than `min_bytes` free.
pub fn short_of_space(path: &Path, min_bytes: u64) -> Option<String> {
    let free = free_bytes(path)?;
    (free < min_bytes).then(|| {
        format!(
            "the data directory {} has {} free (less than {}): when the disk fills, running \
             turns end with an error and new writes are refused (507) until room is made",
            path.display(),
            app::api::file_size(free),
            app::api::file_size(min_bytes)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_has_some_space_and_a_huge_minimum_is_never_met() {
        let dir = tempfile::tempdir().unwrap();
        assert!(free_bytes(dir.path()).is_some_and(|free| free > 0));
        let said = short_of_space(dir.path(), u64::MAX).unwrap();
        assert!(said.contains("507"), "{said}");
        assert_eq!(short_of_space(dir.path(), 0), None);
    }
}
