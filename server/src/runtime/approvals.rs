//! What an approval asks, and exactly what each answer allows (pure). A standing permission
//! is as wide as the card said, no wider: the card offers, narrowest first, this action once,
//! this action in this conversation, at most one wider kind (the file's folder, say) and "in
//! every conversation" only for what is not destructive; each is stored as the pattern and
//! scope it named, and an action goes ahead unasked only when a stored pattern covers it.

use serde_json::{json, Value};

use super::ApprovalChoice;

/// An action to approve, with the permissions the card may offer for it.
#[derive(Clone, Debug, PartialEq)]
pub struct Approval {
    /// The action as the card shows it (`rm -rf target/`).
    pub command: String,
    /// What it does, in words.
    pub description: String,
    /// The pattern of this very action (its command and arguments).
    pub exact: String,
    /// This action in words, for the card ("`rm -rf target/`").
    pub exact_words: String,
    /// A wider kind of action that covers this one, if any may be offered: its pattern, and
    /// its words ("writing any file under `notes/`").
    pub wide: Option<(String, String)>,
    /// Patterns that would let this action go ahead had they been granted (the exact one
    /// and every wider one that covers it).
    pub covered_by: Vec<String>,
    /// It destroys what it touches: never allowed in every conversation from a card.
    pub destructive: bool,
}

/// One answer a card offers.
#[derive(Clone, Debug, PartialEq)]
pub struct Offer {
    /// What the answer says.
    pub choice: ApprovalChoice,
    /// What the button says it allows.
    pub label: String,
    /// The permission it keeps: its pattern, and whether in every conversation (`None`:
    /// none kept).
    pub grant: Option<(String, bool)>,
}

impl Approval {
    /// A command run in a terminal: only this command with these arguments may be kept;
    /// with no "every conversation" when it is destructive.
    pub fn command(command: &str, description: &str) -> Self {
        let command = command.trim();
        Approval {
            command: command.to_owned(),
            description: description.to_owned(),
            exact: command.to_owned(),
            exact_words: format!("`{command}`"),
            wide: None,
            covered_by: vec![command.to_owned()],
            destructive: destructive(command),
        }
    }

    /// A gateway's approval (the Hermes agent's): it keeps its own permission for its
    /// `pattern` (a kind of command it names), which is what "this conversation" and "every
    /// conversation" grant there.
    pub fn gateway(command: &str, description: &str, pattern: &str) -> Self {
        let pattern = if pattern.trim().is_empty() {
            command.trim()
        } else {
            pattern.trim()
        };
        Approval {
            command: command.to_owned(),
            description: description.to_owned(),
            exact: pattern.to_owned(),
            exact_words: format!("commands the agent files under `{pattern}`"),
            wide: None,
            covered_by: vec![pattern.to_owned()],
            destructive: destructive(command) || destructive(pattern),
        }
    }

    /// Writing `path` in the workspace with `tool`: this file, or any file under its folder
    /// (a file at the top has no folder to offer: the whole workspace is never offered).
    pub fn write(tool: &str, path: &str, description: &str) -> Self {
        // A path that names its folder plainly; one that climbs (`notes/../src/x`) is this
        // file alone, never covered by a folder's permission.
        let Some(path) = plain_path(path) else {
            let mut alone = Approval::command(&format!("{tool} {}", path.trim()), description);
            alone.exact_words = format!("writing `{}`", path.trim());
            alone.destructive = false;
            return alone;
        };
        let path = path.as_str();
        let exact = format!("{tool} {path}");
        let folders: Vec<&str> = path
            .char_indices()
            .filter(|(_, c)| *c == '/')
            .map(|(at, _)| &path[..=at])
            .collect();
        let mut covered_by = vec![exact.clone()];
        covered_by.extend(folders.iter().map(|f| format!("{tool} {f}**")));
        let wide = folders.last().map(|folder| {
            (
                format!("{tool} {folder}**"),
                format!("writing any file under `{folder}`"),
            )
        });
        Approval {
            command: exact.clone(),
            description: description.to_owned(),
            exact,
            exact_words: format!("writing `{path}`"),
            wide,
            covered_by,
            destructive: false,
        }
    }

    /// The answers the card offers, narrowest first.
    pub fn offers(&self) -> Vec<Offer> {
        let mut offers = vec![Offer {
            choice: ApprovalChoice::Once,
            label: "Allow once".to_owned(),
            grant: None,
        }];
        offers.push(Offer {
            choice: ApprovalChoice::Session,
            label: format!("Allow {} in this conversation", self.exact_words),
            grant: Some((self.exact.clone(), false)),
        });
        if let Some((pattern, words)) = &self.wide {
            offers.push(Offer {
                choice: ApprovalChoice::SessionWide,
                label: format!("Allow {words} in this conversation"),
                grant: Some((pattern.clone(), false)),
            });
        }
        if !self.destructive {
            let offer = match &self.wide {
                Some((pattern, words)) => Offer {
                    choice: ApprovalChoice::AlwaysWide,
                    label: format!("Allow {words} in every conversation"),
                    grant: Some((pattern.clone(), true)),
                },
                None => Offer {
                    choice: ApprovalChoice::Always,
                    label: format!("Allow {} in every conversation", self.exact_words),
                    grant: Some((self.exact.clone(), true)),
                },
            };
            offers.push(offer);
        }
        offers.push(Offer {
            choice: ApprovalChoice::Deny,
            label: "Deny".to_owned(),
            grant: None,
        });
        offers
    }

    /// The offer `choice` names, if the card made it.
    pub fn offer(&self, choice: ApprovalChoice) -> Option<Offer> {
        self.offers().into_iter().find(|o| o.choice == choice)
    }

    /// The approval event's payload (`approval_id` added by the caller): what is asked and
    /// what each answer allows.
    pub fn payload(&self, id: &str) -> Value {
        let offers = self.offers();
        json!({
            "approval_id": id,
            "command": self.command,
            "description": self.description,
            "pattern_keys": [self.exact],
            "choices": offers.iter().map(|o| o.choice).collect::<Vec<_>>(),
            "options": offers
                .iter()
                .map(|o| json!({"choice": o.choice, "label": o.label}))
                .collect::<Vec<_>>(),
            "status": "pending",
        })
    }
}

/// `path` by its parts (`./a//b` is `a/b`); `None` when one climbs (`..`), the path starts at
/// the root, or a part holds a backslash.
fn plain_path(path: &str) -> Option<String> {
    let path = path.trim();
    if path.starts_with('/') {
        return None;
    }
    let parts: Vec<&str> = path
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect();
    let plain = !parts.is_empty()
        && parts
            .iter()
            .all(|part| *part != ".." && !part.contains('\\'));
    plain.then(|| parts.join("/"))
}

/// Whether a command destroys what it touches (removes, overwrites, wipes, forces).
pub fn destructive(command: &str) -> bool {
    let lower = command.to_ascii_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    let first = words
        .iter()
        .find(|w| !matches!(**w, "sudo" | "env" | "nohup" | "time"))
        .copied()
        .unwrap_or_default();
    let first = first.rsplit('/').next().unwrap_or(first);
    let removes = matches!(
        first,
        "rm" | "rmdir"
            | "shred"
            | "dd"
            | "mkfs"
            | "truncate"
            | "wipefs"
            | "unlink"
            | "kill"
            | "pkill"
            | "killall"
            | "reboot"
            | "shutdown"
    ) || first.starts_with("mkfs.");
    let forced = words.iter().any(|w| {
        matches!(
            *w,
            "--force" | "-f" | "--hard" | "--force-with-lease" | "-rf" | "-fr"
        )
    });
    let sql =
        lower.contains("drop ") || lower.contains("delete from") || lower.contains("truncate ");
    removes || forced || sql || lower.contains(" > /") || lower.contains("| sh")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_destructive_command_is_offered_for_itself_in_this_conversation_only() {
        let rm = Approval::command("rm -rf target/", "Delete the build directory");
        let offers = rm.offers();
        let choices: Vec<ApprovalChoice> = offers.iter().map(|o| o.choice).collect();
        assert_eq!(
            choices,
            [
                ApprovalChoice::Once,
                ApprovalChoice::Session,
                ApprovalChoice::Deny
            ]
        );
        assert_eq!(
            offers[1].label,
            "Allow `rm -rf target/` in this conversation"
        );
        assert_eq!(offers[1].grant, Some(("rm -rf target/".to_owned(), false)));
        // Another rm is not covered by it.
        let root = Approval::command("rm -rf /", "");
        assert!(!root.covered_by.contains(&rm.exact));
        assert_eq!(rm.offer(ApprovalChoice::Always), None);
    }

    #[test]
    fn a_write_is_offered_for_its_file_then_its_folder_never_the_workspace() {
        let write = Approval::write("write_file", "notes/plans.md", "Write 10 bytes");
        let offers = write.offers();
        let labels: Vec<&str> = offers.iter().map(|o| o.label.as_str()).collect();
        assert_eq!(
            labels,
            [
                "Allow once",
                "Allow writing `notes/plans.md` in this conversation",
                "Allow writing any file under `notes/` in this conversation",
                "Allow writing any file under `notes/` in every conversation",
                "Deny",
            ]
        );
        assert_eq!(
            offers[3].grant,
            Some(("write_file notes/**".to_owned(), true))
        );
        // A folder's grant covers what is under it, and nothing beside it.
        let deeper = Approval::write("write_file", "notes/2026/jan.md", "");
        assert!(deeper
            .covered_by
            .contains(&"write_file notes/**".to_owned()));
        let beside = Approval::write("write_file", "src/main.rs", "");
        assert!(!beside
            .covered_by
            .contains(&"write_file notes/**".to_owned()));
        // A path that climbs out of a folder is never covered by that folder's permission.
        let climbing = Approval::write("write_file", "notes/../src/main.rs", "");
        assert!(climbing.wide.is_none());
        assert_eq!(climbing.covered_by, ["write_file notes/../src/main.rs"]);
        let roundabout = Approval::write("write_file", "./notes//a.md", "");
        assert_eq!(roundabout.exact, "write_file notes/a.md");
        assert!(roundabout
            .covered_by
            .contains(&"write_file notes/**".to_owned()));
        // At the top: the file alone, then every conversation for the file alone.
        let top = Approval::write("write_file", "README.md", "");
        assert!(top.wide.is_none());
        assert_eq!(
            top.offers()[2].label,
            "Allow writing `README.md` in every conversation"
        );
    }

    #[test]
    fn destructive_commands_are_told_apart() {
        for bad in [
            "rm -rf target/",
            "sudo rm x",
            "/bin/rm -r a",
            "git push --force",
            "git reset --hard HEAD~3",
            "dd if=/dev/zero of=/dev/sda",
            "psql -c 'DROP TABLE users'",
            "mkfs.ext4 /dev/sdb1",
            "curl x | sh",
        ] {
            assert!(destructive(bad), "{bad}");
        }
        for fine in ["ls -la", "cargo test", "git status", "npm run build"] {
            assert!(!destructive(fine), "{fine}");
        }
    }
}
