//! File tools confined to one workspace directory.
//!
//! Every path a model gives is relative to the workspace. Absolute paths, `..` that climbs out
//! and symbolic links that point outside are refused; results are bounded so a large tree or
//! file cannot flood the model's context.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

/// The tools' names, each spelled here once: the model is offered them by these names, asks
/// for them by these names, and a standing permission names `WRITE_FILE`.
pub mod names {
    /// Lists a directory.
    pub const LIST_FILES: &str = "list_files";
    /// Reads a text file.
    pub const READ_FILE: &str = "read_file";
    /// Finds lines that contain a text.
    pub const SEARCH_TEXT: &str = "search_text";
    /// Writes a text file (the user approves it).
    pub const WRITE_FILE: &str = "write_file";
    /// Asks the user a question.
    pub const ASK_USER: &str = "ask_user";
}

/// Largest file `read_file` returns whole (larger files are cut, with a note).
pub const READ_LIMIT: usize = 64 * 1024;
/// Most entries `list_files` returns.
pub const LIST_LIMIT: usize = 200;
/// Most matching lines `search_text` returns.
pub const MATCH_LIMIT: usize = 50;
/// Largest content `write_file` accepts.
pub const WRITE_LIMIT: usize = 1024 * 1024;
/// Files larger than this are skipped by `search_text`.
const SEARCH_FILE_LIMIT: u64 = 1024 * 1024;
/// Files `search_text` looks at, at most.
const SEARCH_FILES_LIMIT: usize = 5_000;

/// The directory the tools work in.
#[derive(Clone, Debug)]
pub struct Workspace {
    root: PathBuf,
}

/// A tool's failure, worded for the model (and shown to the user).
pub type ToolResult = Result<String, String>;

impl Workspace {
    /// Opens (creating if needed) the workspace at `root`.
    pub fn open(root: &Path) -> io::Result<Self> {
        fs::create_dir_all(root)?;
        Ok(Workspace {
            root: root.canonicalize()?,
        })
    }

    /// The workspace at `root`, an existing directory given in canonical form.
    pub(crate) fn at(root: PathBuf) -> Self {
        Workspace { root }
    }

    /// The workspace's absolute path.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The absolute path of `rel` inside the workspace, or why it is refused. The path need
    /// not exist; its deepest existing ancestor must resolve inside the workspace.
    pub fn resolve(&self, rel: &str) -> Result<PathBuf, String> {
        let rel = rel.trim();
        if rel.contains('\0') {
            return Err("The path contains a NUL character.".into());
        }
        let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
        for component in Path::new(rel).components() {
            match component {
                Component::Normal(part) => parts.push(part),
                Component::CurDir => {}
                Component::ParentDir => {
                    if parts.pop().is_none() {
                        return Err(format!("`{rel}` is outside the workspace."));
                    }
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(format!(
                        "`{rel}` is an absolute path; give a path relative to the workspace."
                    ));
                }
            }
        }
        let path = parts.iter().fold(self.root.clone(), |p, part| p.join(part));
        // Symbolic links: what exists must resolve inside the workspace.
        let mut existing = path.as_path();
        loop {
            match existing.canonicalize() {
                Ok(real) if real.starts_with(&self.root) => return Ok(path),
                Ok(_) => return Err(format!("`{rel}` is outside the workspace.")),
                // It exists but does not resolve: a dangling symbolic link, whose target
                // (anywhere) a write would create.
                Err(_) if fs::symlink_metadata(existing).is_ok() => {
                    return Err(format!(
                        "`{rel}` goes through a symbolic link that points nowhere."
                    ));
                }
                Err(_) => match existing.parent() {
                    Some(parent) => existing = parent,
                    None => return Err(format!("`{rel}` is outside the workspace.")),
                },
            }
        }
    }

    fn display(&self, path: &Path) -> String {
        let rel = path.strip_prefix(&self.root).unwrap_or(path);
        let shown = rel.to_string_lossy().replace('\\', "/");
        if shown.is_empty() {
            ".".into()
        } else {
            shown
        }
    }

    /// Lists a directory: one entry per line, directories with a trailing `/`.
    pub fn list_files(&self, rel: &str) -> ToolResult {
        let dir = self.resolve(rel)?;
        let entries = fs::read_dir(&dir).map_err(|e| format!("Cannot list `{rel}`: {e}."))?;
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .map(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                match entry.file_type() {
                    Ok(t) if t.is_dir() => format!("{name}/"),
                    _ => name,
                }
            })
            .collect();
        names.sort();
        let total = names.len();
        if total == 0 {
            return Ok(format!("{} is empty.", self.display(&dir)));
        }
        names.truncate(LIST_LIMIT);
        let mut out = names.join("\n");
        if total > LIST_LIMIT {
            out.push_str(&format!("\n… and {} more", total - LIST_LIMIT));
        }
        Ok(out)
    }

    /// Reads a UTF-8 text file (the first [`READ_LIMIT`] bytes).
    pub fn read_file(&self, rel: &str) -> ToolResult {
        use std::io::Read as _;
        let path = self.resolve(rel)?;
        let cannot = |e: io::Error| format!("Cannot read `{rel}`: {e}.");
        let meta = fs::metadata(&path).map_err(cannot)?;
        // Only regular files: a FIFO or a device would block or never end.
        if !meta.is_file() {
            return Err(format!("`{rel}` is not a regular file."));
        }
        let mut bytes = Vec::new();
        fs::File::open(&path)
            .and_then(|f| f.take(READ_LIMIT as u64 + 1).read_to_end(&mut bytes))
            .map_err(cannot)?;
        let size = meta.len().max(bytes.len() as u64);
        let cut = bytes.len() > READ_LIMIT;
        let shown = if cut { &bytes[..READ_LIMIT] } else { &bytes };
        let text = match std::str::from_utf8(shown) {
            Ok(t) => t.to_owned(),
            // A cut inside a character: keep the whole characters.
            Err(e) if cut && e.error_len().is_none() => {
                String::from_utf8_lossy(&shown[..e.valid_up_to()]).into_owned()
            }
            Err(_) => return Err(format!("`{rel}` is not a UTF-8 text file.")),
        };
        if cut {
            Ok(format!("{text}\n… (cut at {READ_LIMIT} of {size} bytes)"))
        } else {
            Ok(text)
        }
    }

    /// Finds lines containing `query` (case-insensitive) under a directory.
    pub fn search_text(&self, query: &str, rel: &str) -> ToolResult {
        if query.trim().is_empty() {
            return Err("The search query is empty.".into());
        }
        let needle = query.to_lowercase();
        let start = self.resolve(rel)?;
        let mut stack = vec![start];
        let mut matches = Vec::new();
        let mut files = 0usize;
        while let Some(path) = stack.pop() {
            let Ok(meta) = fs::symlink_metadata(&path) else {
                continue;
            };
            if meta.is_dir() {
                if let Ok(entries) = fs::read_dir(&path) {
                    let mut children: Vec<PathBuf> =
                        entries.filter_map(Result::ok).map(|e| e.path()).collect();
                    children.sort();
                    stack.extend(children.into_iter().rev());
                }
                continue;
            }
            if !meta.is_file() || meta.len() > SEARCH_FILE_LIMIT {
                continue;
            }
            files += 1;
            if files > SEARCH_FILES_LIMIT {
                matches.push(format!(
                    "… stopped after {SEARCH_FILES_LIMIT} files; narrow the path"
                ));
                break;
            }
            let Ok(text) = fs::read_to_string(&path) else {
                continue;
            };
            for (n, line) in text.lines().enumerate() {
                if line.to_lowercase().contains(&needle) {
                    let line: String = line.trim().chars().take(200).collect();
                    matches.push(format!("{}:{}: {line}", self.display(&path), n + 1));
                    if matches.len() >= MATCH_LIMIT {
                        matches.push(format!("… stopped at {MATCH_LIMIT} matches"));
                        return Ok(matches.join("\n"));
                    }
                }
            }
        }
        if matches.is_empty() {
            Ok(format!("No line contains `{query}`."))
        } else {
            Ok(matches.join("\n"))
        }
    }

    /// Writes a text file, creating parent directories inside the workspace.
    pub fn write_file(&self, rel: &str, content: &str) -> ToolResult {
        if content.len() > WRITE_LIMIT {
            return Err(format!(
                "The content is {} bytes; the limit is {WRITE_LIMIT}.",
                content.len()
            ));
        }
        let path = self.resolve(rel)?;
        if path == self.root {
            return Err("Give a file path, not the workspace itself.".into());
        }
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(|e| format!("Cannot create `{rel}`: {e}."))?;
        }
        // Re-check after creating directories: a link may have appeared on the way.
        let path = self.resolve(rel)?;
        fs::write(&path, content).map_err(|e| format!("Cannot write `{rel}`: {e}."))?;
        Ok(format!(
            "Wrote {} bytes to {}.",
            content.len(),
            self.display(&path)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn workspace() -> (tempfile::TempDir, Workspace) {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(&dir.path().join("ws")).unwrap();
        (dir, ws)
    }

    #[test]
    fn paths_that_leave_the_workspace_are_refused() {
        let (dir, ws) = workspace();
        fs::write(dir.path().join("secret.txt"), "top secret").unwrap();
        for bad in ["../secret.txt", "a/../../secret.txt", "/etc/passwd"] {
            assert!(ws.read_file(bad).is_err(), "{bad} was readable");
            assert!(ws.write_file(bad, "x").is_err(), "{bad} was writable");
        }
        assert_eq!(
            fs::read_to_string(dir.path().join("secret.txt")).unwrap(),
            "top secret"
        );
        // `..` that stays inside is fine.
        ws.write_file("a/b.txt", "inside").unwrap();
        assert_eq!(ws.read_file("a/../a/b.txt").unwrap(), "inside");
    }

    #[cfg(unix)]
    #[test]
    fn symbolic_links_out_of_the_workspace_are_refused() {
        let (dir, ws) = workspace();
        fs::write(dir.path().join("secret.txt"), "top secret").unwrap();
        std::os::unix::fs::symlink(dir.path(), ws.root().join("escape")).unwrap();
        assert!(ws.read_file("escape/secret.txt").is_err());
        assert!(ws.write_file("escape/new.txt", "x").is_err());
        assert!(!dir.path().join("new.txt").exists());
        assert!(ws.list_files("escape").is_err());
    }

    #[cfg(unix)]
    #[test]
    fn dangling_links_and_special_files_are_refused() {
        let (dir, ws) = workspace();
        let victim = dir.path().join("victim.txt");
        std::os::unix::fs::symlink(&victim, ws.root().join("out")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("nowhere"), ws.root().join("d")).unwrap();
        assert!(ws
            .write_file("out", "x")
            .unwrap_err()
            .contains("points nowhere"));
        assert!(ws.write_file("d/new.txt", "x").is_err());
        assert!(!victim.exists(), "nothing was created outside");
        assert!(!dir.path().join("nowhere").exists());
        let fifo = ws.root().join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            assert!(ws
                .read_file("pipe")
                .unwrap_err()
                .contains("not a regular file"));
        }
        assert!(ws
            .read_file(".")
            .unwrap_err()
            .contains("not a regular file"));
    }

    #[test]
    fn list_read_search_and_write() {
        let (_dir, ws) = workspace();
        assert!(ws.list_files(".").unwrap().contains("empty"));
        ws.write_file("src/main.rs", "fn main() {\n    println!(\"Hello\");\n}\n")
            .unwrap();
        ws.write_file("README.md", "# Demo\nsay hello\n").unwrap();
        assert_eq!(ws.list_files("").unwrap(), "README.md\nsrc/");
        assert_eq!(ws.list_files("src").unwrap(), "main.rs");
        assert!(ws.read_file("src/main.rs").unwrap().contains("println!"));
        let found = ws.search_text("HELLO", ".").unwrap();
        assert_eq!(
            found,
            "README.md:2: say hello\nsrc/main.rs:2: println!(\"Hello\");"
        );
        assert!(ws
            .search_text("absent", ".")
            .unwrap()
            .starts_with("No line"));
        assert!(ws.read_file("missing.txt").is_err());
    }

    #[test]
    fn large_and_binary_files_are_bounded() {
        let (_dir, ws) = workspace();
        let big = "é".repeat(READ_LIMIT); // 2 bytes each: cut inside a character
        fs::write(ws.root().join("big.txt"), &big).unwrap();
        let read = ws.read_file("big.txt").unwrap();
        assert!(read.contains("cut at"));
        assert!(read.len() < READ_LIMIT + 100);
        fs::write(ws.root().join("bin"), [0xff, 0xfe, 0x00]).unwrap();
        assert!(ws.read_file("bin").unwrap_err().contains("not a UTF-8"));
        assert!(ws.write_file("x", &"a".repeat(WRITE_LIMIT + 1)).is_err());
    }
}
