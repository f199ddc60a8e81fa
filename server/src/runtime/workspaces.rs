//! One workspace per account: `--workspace DIR` holds `DIR/<account id>/`, made on first use.
//! The agent's file tools and the files a message carries live in the workspace of the account
//! the conversation belongs to, so one account's agent never sees another's files. With no
//! account (open mode, loopback only) the workspace is `DIR` itself, as it always was.
//!
//! Each workspace is held to a size (the account's storage quota): a write, or a file placed
//! for the model, that would pass it is refused with a message saying so.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use super::tools::{ToolResult, Workspace};

/// Where placed attachments go inside a workspace.
pub const ATTACHMENTS_DIR: &str = "attachments";

/// Entries a size count walks at most; a workspace with more is taken to be full.
const COUNT_LIMIT: usize = 20_000;

/// The workspaces of every account under one directory.
#[derive(Clone, Debug)]
pub struct Workspaces {
    root: PathBuf,
    quota: u64,
}

impl Workspaces {
    /// Opens (creating if needed) the directory at `root`; each workspace may hold `quota`
    /// bytes.
    pub fn open(root: &Path, quota: u64) -> io::Result<Self> {
        fs::create_dir_all(root)?;
        Ok(Workspaces {
            root: root.canonicalize()?,
            quota,
        })
    }

    /// The directory that holds them (open mode's workspace).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// How many bytes one workspace may hold.
    pub fn quota(&self) -> u64 {
        self.quota
    }

    /// The workspace of `owner` (`None`: open mode, the whole directory), made on first use.
    /// An account's directory must be a plain directory right under the root: a link planted
    /// in its place (by an agent of open mode, say) is refused, never followed.
    pub fn of(&self, owner: Option<&str>) -> Result<Workspace, String> {
        let Some(owner) = owner else {
            return Ok(Workspace::at(self.root.clone()));
        };
        if owner.is_empty()
            || owner.len() > 64
            || !owner
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            return Err("This account has no workspace.".into());
        }
        let dir = self.root.join(owner);
        match fs::symlink_metadata(&dir) {
            Ok(meta) if meta.file_type().is_dir() => {}
            Ok(_) => return Err("This account's workspace is not a directory.".into()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                fs::create_dir(&dir)
                    .or_else(|e| {
                        if e.kind() == io::ErrorKind::AlreadyExists {
                            Ok(())
                        } else {
                            Err(e)
                        }
                    })
                    .map_err(|e| format!("Cannot make this account's workspace: {e}."))?;
                // Made by another turn meanwhile: it must still be a plain directory.
                if !fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_dir()) {
                    return Err("This account's workspace is not a directory.".into());
                }
            }
            Err(e) => return Err(format!("Cannot open this account's workspace: {e}.")),
        }
        Ok(Workspace::at(dir))
    }

    /// Writes a text file the model is to read, with its quota checked: files of a message
    /// go to `attachments/<first 16 hex digits of their SHA-256>/<name>`, so a retry or a
    /// later turn carrying the same file finds it there instead of writing it again.
    /// Answers where it is, relative to the workspace.
    pub fn place(&self, workspace: &Workspace, name: &str, text: &str) -> Result<String, String> {
        let digest = hex::encode(Sha256::digest(text.as_bytes()));
        let rel = format!("{ATTACHMENTS_DIR}/{}/{name}", &digest[..16]);
        let path = workspace.resolve(&rel)?;
        if fs::metadata(&path).is_ok_and(|m| m.is_file() && m.len() == text.len() as u64) {
            return Ok(rel);
        }
        self.write(workspace, &rel, text)?;
        Ok(rel)
    }

    /// `write_file` of the tools, held to the quota.
    pub fn write(&self, workspace: &Workspace, rel: &str, content: &str) -> ToolResult {
        let path = workspace.resolve(rel)?;
        let replaced = fs::symlink_metadata(&path)
            .ok()
            .filter(fs::Metadata::is_file)
            .map_or(0, |m| m.len());
        let used = usage(workspace.root())?;
        let after = used.saturating_sub(replaced) + content.len() as u64;
        if after > self.quota {
            return Err(format!(
                "The workspace is full: it holds {}, and this would make it {}, past its \
                 limit of {}. Remove files first.",
                app::api::file_size(used),
                app::api::file_size(after),
                app::api::file_size(self.quota)
            ));
        }
        workspace.write_file(rel, content)
    }
}

/// The bytes the regular files under `dir` take (links are not followed); refused past
/// [`COUNT_LIMIT`] entries.
fn usage(dir: &Path) -> Result<u64, String> {
    let mut total = 0u64;
    let mut seen = 0usize;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            seen += 1;
            if seen > COUNT_LIMIT {
                return Err(format!(
                    "The workspace holds more than {COUNT_LIMIT} files and folders, its limit. \
                     Remove some first."
                ));
            }
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() && !entry.file_type().is_ok_and(|t| t.is_symlink()) {
                stack.push(entry.path());
            } else if meta.is_file() {
                total += meta.len();
            }
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspaces(quota: u64) -> (tempfile::TempDir, Workspaces) {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspaces::open(&dir.path().join("ws"), quota).unwrap();
        (dir, ws)
    }

    #[test]
    fn each_account_has_a_directory_of_its_own() {
        let (_dir, all) = workspaces(1 << 20);
        let alice = all.of(Some("a1")).unwrap();
        let bob = all.of(Some("b2")).unwrap();
        all.write(&alice, "secret.txt", "alice's").unwrap();
        assert!(bob.read_file("secret.txt").is_err());
        assert!(bob.read_file("../a1/secret.txt").is_err());
        assert_eq!(bob.list_files(".").unwrap(), ". is empty.");
        assert!(bob
            .search_text("alice", ".")
            .unwrap()
            .starts_with("No line"));
        // Open mode sees the whole directory.
        assert!(all
            .of(None)
            .unwrap()
            .list_files(".")
            .unwrap()
            .contains("a1/"));
        for bad in ["", "..", "a/b", "a b", "../x"] {
            assert!(all.of(Some(bad)).is_err(), "{bad:?}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_link_in_place_of_an_accounts_directory_is_refused() {
        let (dir, all) = workspaces(1 << 20);
        fs::write(dir.path().join("outside.txt"), "x").unwrap();
        std::os::unix::fs::symlink(dir.path(), all.root().join("c3")).unwrap();
        assert!(all.of(Some("c3")).is_err());
    }

    #[test]
    fn placed_files_are_reused_and_the_quota_holds() {
        let (_dir, all) = workspaces(100);
        let ws = all.of(Some("a1")).unwrap();
        let first = all.place(&ws, "notes.txt", "hello").unwrap();
        assert!(first.starts_with("attachments/") && first.ends_with("/notes.txt"));
        let path = ws.root().join(&first);
        let written = fs::metadata(&path).unwrap().modified().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert_eq!(all.place(&ws, "notes.txt", "hello").unwrap(), first);
        assert_eq!(fs::metadata(&path).unwrap().modified().unwrap(), written);
        let full = all.write(&ws, "big.txt", &"x".repeat(96)).unwrap_err();
        assert!(full.contains("workspace is full"), "{full}");
        // Replacing a file counts only the difference.
        all.write(&ws, "a.txt", &"y".repeat(90)).unwrap();
        all.write(&ws, "a.txt", &"z".repeat(95)).unwrap();
        assert!(all.place(&ws, "more.txt", "another one").is_err());
    }
}
