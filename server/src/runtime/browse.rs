//! The account's workspace as its person sees it, read-only: a directory's entries and a
//! file's bytes, both bounded. Paths resolve as the agent's tools resolve them
//! ([`Workspace::resolve`]): nothing outside the workspace, no link out of it; only plain
//! directories and regular files are shown (a link, a pipe or a device is not).

use std::fs;
use std::io::{self, Read as _};
use std::path::Path;

use app::api::{WorkspaceEntry, WorkspaceListing};

use super::tools::Workspace;

/// Entries a listing shows at most (`more` says when there were others).
pub const LIST_LIMIT: usize = 500;
/// Entries a listing reads at most before it sorts them: the work of one listing is bounded,
/// however many files a directory holds.
const READ_LIMIT: usize = 10_000;
/// The largest file shown or downloaded, in bytes.
pub const FILE_LIMIT: u64 = 16 * 1024 * 1024;

/// Why a path cannot be shown.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// Nothing there (or nothing that may be shown).
    Missing(String),
    /// A path that is not one of the workspace's, or not of the kind asked for.
    Bad(String),
    /// A file past [`FILE_LIMIT`]: its size.
    TooLarge(u64),
}

/// The path of `path` inside the workspace, `/`-separated (`""`: the workspace itself).
fn shown(workspace: &Workspace, path: &Path) -> String {
    path.strip_prefix(workspace.root())
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// The directory `rel` (`""`: the top): its directories first, then its files, by name.
pub fn list(workspace: &Workspace, rel: &str) -> Result<WorkspaceListing, Refused> {
    let dir = workspace.resolve(rel).map_err(Refused::Bad)?;
    let missing = |_: io::Error| Refused::Missing(format!("`{rel}` is not in the workspace."));
    if !fs::metadata(&dir).map_err(missing)?.is_dir() {
        return Err(Refused::Bad(format!("`{rel}` is not a directory.")));
    }
    let path = shown(workspace, &dir);
    let mut entries = Vec::new();
    let mut more = false;
    for (read, entry) in fs::read_dir(&dir).map_err(missing)?.enumerate() {
        if read == READ_LIMIT {
            more = true;
            break;
        }
        let Ok(entry) = entry else { continue };
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if !(kind.is_dir() || kind.is_file()) {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let size = if kind.is_file() {
            entry.metadata().map_or(0, |m| m.len())
        } else {
            0
        };
        entries.push(WorkspaceEntry {
            path: if path.is_empty() {
                name.clone()
            } else {
                format!("{path}/{name}")
            },
            name,
            dir: kind.is_dir(),
            size,
        });
    }
    entries.sort_by(|a, b| {
        b.dir
            .cmp(&a.dir)
            .then_with(|| a.name.to_lowercase().cmp(&b.name.to_lowercase()))
            .then_with(|| a.name.cmp(&b.name))
    });
    if entries.len() > LIST_LIMIT {
        entries.truncate(LIST_LIMIT);
        more = true;
    }
    Ok(WorkspaceListing {
        path,
        entries,
        more,
    })
}

/// The file `rel`: its name and its bytes.
pub fn read(workspace: &Workspace, rel: &str) -> Result<(String, Vec<u8>), Refused> {
    let path = workspace.resolve(rel).map_err(Refused::Bad)?;
    let missing = |_: io::Error| Refused::Missing(format!("`{rel}` is not in the workspace."));
    let meta = fs::metadata(&path).map_err(missing)?;
    if !meta.is_file() {
        return Err(Refused::Bad(format!("`{rel}` is not a file.")));
    }
    if meta.len() > FILE_LIMIT {
        return Err(Refused::TooLarge(meta.len()));
    }
    let mut bytes = Vec::new();
    fs::File::open(&path)
        .and_then(|f| f.take(FILE_LIMIT + 1).read_to_end(&mut bytes))
        .map_err(missing)?;
    if bytes.len() as u64 > FILE_LIMIT {
        return Err(Refused::TooLarge(bytes.len() as u64));
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    Ok((name, bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        (dir, ws)
    }

    #[test]
    fn a_listing_shows_directories_then_files_and_nothing_outside() {
        let (_dir, ws) = workspace();
        fs::create_dir_all(ws.root().join("src/deep")).unwrap();
        fs::write(ws.root().join("b.txt"), "bee").unwrap();
        fs::write(ws.root().join("A.md"), "# a").unwrap();
        fs::write(ws.root().join("src/main.rs"), "fn main() {}").unwrap();
        let top = list(&ws, "").unwrap();
        let names: Vec<(&str, bool)> = top
            .entries
            .iter()
            .map(|e| (e.name.as_str(), e.dir))
            .collect();
        assert_eq!(names, [("src", true), ("A.md", false), ("b.txt", false)]);
        assert_eq!(top.entries[2].size, 3);
        let src = list(&ws, "src/").unwrap();
        assert_eq!(src.path, "src");
        assert_eq!(src.entries[0].path, "src/deep");
        assert_eq!(src.entries[1].path, "src/main.rs");
        assert!(matches!(list(&ws, "../"), Err(Refused::Bad(_))));
        assert!(matches!(list(&ws, "/etc"), Err(Refused::Bad(_))));
        assert!(matches!(list(&ws, "nowhere"), Err(Refused::Missing(_))));
        assert!(matches!(list(&ws, "b.txt"), Err(Refused::Bad(_))));
    }

    #[cfg(unix)]
    #[test]
    fn links_are_neither_listed_nor_followed_out() {
        let (_dir, ws) = workspace();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.root().join("out")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), ws.root().join("s")).unwrap();
        assert!(list(&ws, "").unwrap().entries.is_empty());
        assert!(matches!(read(&ws, "out/secret"), Err(Refused::Bad(_))));
        assert!(matches!(read(&ws, "s"), Err(Refused::Bad(_))));
    }

    #[test]
    fn a_file_is_read_whole_up_to_its_limit() {
        let (_dir, ws) = workspace();
        fs::write(ws.root().join("n.txt"), "notes").unwrap();
        assert_eq!(
            read(&ws, "n.txt").unwrap(),
            ("n.txt".to_owned(), b"notes".to_vec())
        );
        let big = fs::File::create(ws.root().join("big.bin")).unwrap();
        big.set_len(FILE_LIMIT + 1).unwrap();
        assert_eq!(read(&ws, "big.bin"), Err(Refused::TooLarge(FILE_LIMIT + 1)));
        assert!(matches!(read(&ws, ""), Err(Refused::Bad(_))));
        assert!(matches!(read(&ws, "gone.txt"), Err(Refused::Missing(_))));
    }
}
