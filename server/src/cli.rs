//! `server user …`: accounts, managed from the machine the server runs on.
//!
//! These commands open the database directly (a running server sees the change on its next
//! request) and never take the data directory's lock.

use std::io::{BufRead as _, IsTerminal as _};

use anyhow::Context as _;

use crate::auth;
use crate::config::UserCommand;
use crate::store::StoreError;

/// A command's failure that is the user's to fix (exit code 2), as opposed to a broken
/// machine (exit code 1).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Where the server these commands manage can be reached from, when others can: its
/// `--addr` or `--public-url` as given here (flags or environment), or as the data
/// directory's lock file records the server that runs (or last ran) on it.
pub fn exposure(config: &crate::Config) -> Option<String> {
    if let Some(public) = &config.public_url {
        return Some(public.origin.clone());
    }
    if let Some(addr) = config.addr.filter(|a| !a.ip().is_loopback()) {
        return Some(addr.to_string());
    }
    crate::Listening::recorded(&config.data_dir)
        .filter(crate::Listening::exposed)
        .map(|l| l.public_url.unwrap_or_else(|| l.addr.to_string()))
}

/// Runs a `user` command against the database (PostgreSQL at `database_url`, else the SQLite
/// file under `data_dir`); `out` gets what it reports. `exposed` says where others reach the
/// server, if they do (see [`exposure`]).
pub async fn user(
    command: &UserCommand,
    database_url: Option<&str>,
    data_dir: &std::path::Path,
    exposed: Option<&str>,
    out: &mut dyn std::io::Write,
) -> anyhow::Result<()> {
    let store = crate::store::sql::open(database_url, data_dir).await?;
    let usage = |m: String| anyhow::Error::new(UsageError(m));
    let unknown = |name: &str| usage(format!("there is no account named {name:?}"));
    match command {
        UserCommand::Add { name, admin } => {
            let name = auth::check_name(name).map_err(usage)?;
            if store.user_credentials(name).await.is_ok() {
                return Err(usage(format!("an account named {name:?} exists")));
            }
            let password = read_new_password(name)?;
            let hash = auth::hash_password(&password).map_err(anyhow::Error::msg)?;
            let (user, adopted) = match store
                .create_user(name, &hash, *admin, crate::clock::now())
                .await
            {
                Ok(made) => made,
                Err(StoreError::NameTaken) => {
                    return Err(usage(format!("an account named {name:?} exists")))
                }
                Err(e) => return Err(e.into()),
            };
            let role = if user.admin {
                "admin account"
            } else {
                "account"
            };
            writeln!(out, "added the {role} {:?}", user.name)?;
            if adopted > 0 {
                writeln!(
                    out,
                    "{:?} now owns the {adopted} conversation{} made without an account",
                    user.name,
                    if adopted == 1 { "" } else { "s" }
                )?;
            }
        }
        UserCommand::Passwd {
            name,
            keep_passkeys,
            revoke_shares,
        } => {
            let (user, _) = store
                .user_credentials(name.trim())
                .await
                .map_err(|_| unknown(name))?;
            // A new password is for an account someone else may have used: asked at a
            // terminal, what they may have left behind goes too (passkeys, links).
            let at_terminal = std::io::stdin().is_terminal();
            let passkeys = store.passkeys(&user.id).await?.len();
            let shares = store.shares(Some(&user.id)).await?.len();
            let password = read_new_password(&user.name)?;
            let remove_passkeys = passkeys > 0
                && !keep_passkeys
                && (!at_terminal
                    || ask(&format!(
                        "Remove its {passkeys} passkey(s) too (someone else may have added one)? [Y/n] "
                    ), true)?);
            let revoke = shares > 0
                && (*revoke_shares
                    || (at_terminal
                        && ask(
                            &format!("Revoke its {shares} share link(s) too? [y/N] "),
                            false,
                        )?));
            let hash = auth::hash_password(&password).map_err(anyhow::Error::msg)?;
            store.set_password(&user.name, &hash).await?;
            writeln!(
                out,
                "changed the password of {:?}; it is signed out everywhere",
                user.name
            )?;
            if remove_passkeys {
                let removed = store.remove_passkeys(&user.id).await?;
                writeln!(out, "removed its {removed} passkey(s)")?;
            } else if passkeys > 0 {
                writeln!(
                    out,
                    "its {passkeys} passkey(s) still sign in: Settings → Passkeys lists them, to remove any that is not yours"
                )?;
            }
            if revoke {
                let revoked = store.revoke_shares(&user.id).await?;
                writeln!(out, "revoked its {revoked} share link(s)")?;
            } else if shares > 0 {
                writeln!(
                    out,
                    "its {shares} share link(s) still answer: Settings → Shared links revokes them (or --revoke-shares)"
                )?;
            }
        }
        UserCommand::Remove { name, force } => {
            let last = store.count_users().await? == 1
                && store.user_credentials(name.trim()).await.is_ok();
            if let (true, Some(exposed), false) = (last, exposed, *force) {
                return Err(usage(format!(
                    "{:?} is the last account. Without one the server has no sign-in, so it \
                     answers only this machine: whoever reaches it at {exposed} is refused. \
                     Add another account first, or remove this one with --force",
                    name.trim()
                )));
            }
            match store.remove_user(name.trim()).await {
                Ok(()) => {}
                Err(StoreError::NotFound) => return Err(unknown(name)),
                Err(e) => return Err(e.into()),
            }
            writeln!(out, "removed the account {:?}", name.trim())?;
            if store.count_users().await? == 0 {
                writeln!(
                    out,
                    "no accounts are left: the server answers this machine only, with no sign-in"
                )?;
            }
        }
        UserCommand::List => {
            let users = store.users().await?;
            if users.is_empty() {
                writeln!(
                    out,
                    "no accounts: the server is open on loopback (add one: server user add NAME)"
                )?;
            }
            for user in users {
                writeln!(
                    out,
                    "{}{}",
                    user.name,
                    if user.admin { " (admin)" } else { "" }
                )?;
            }
        }
    }
    Ok(())
}

/// Asks a yes-or-no question at the terminal; an empty answer is `default`.
fn ask(question: &str, default: bool) -> anyhow::Result<bool> {
    eprint!("{question}");
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .context("reading the answer")?;
    Ok(match line.trim().to_ascii_lowercase().as_str() {
        "" => default,
        answer => answer.starts_with('y'),
    })
}

/// A new password: one line of stdin when it is not a terminal, else typed twice without echo.
fn read_new_password(name: &str) -> anyhow::Result<String> {
    let password = if std::io::stdin().is_terminal() {
        let first = rpassword::prompt_password(format!("New password for {name}: "))
            .context("reading the password")?;
        auth::check_password(&first).map_err(|m| anyhow::Error::new(UsageError(m)))?;
        let second = rpassword::prompt_password("Again: ").context("reading the password again")?;
        if first != second {
            return Err(UsageError("the two passwords differ".into()).into());
        }
        first
    } else {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .context("reading the password from stdin")?;
        line.trim_end_matches(['\r', '\n']).to_owned()
    };
    auth::check_password(&password).map_err(|m| anyhow::Error::new(UsageError(m)))?;
    Ok(password)
}
