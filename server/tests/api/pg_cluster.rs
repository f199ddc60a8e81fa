//! A PostgreSQL cluster of one test's own (Debian's programs: `initdb`, `pg_ctl`), in a
//! temporary directory on a free loopback port, that the test may stop, start and restart
//! while a server uses it. Stopped and removed when dropped.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A throwaway cluster: trust authentication on loopback, no fsync (nothing in it outlives
/// the test).
pub struct PgCluster {
    dir: tempfile::TempDir,
    bin: PathBuf,
    port: u16,
}

/// The newest installed PostgreSQL's programs.
fn programs() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL's programs (scripts/setup.sh test installs them)")
        .filter_map(Result::ok)
        .map(|entry| entry.path().join("bin"))
        .filter(|bin| bin.join("pg_ctl").exists())
        .collect();
    found.sort_by_key(|bin| {
        bin.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    found.pop().expect("an installed PostgreSQL")
}

/// A cluster program, run as the `postgres` account when this runs as root (PostgreSQL
/// refuses to run as root).
fn command(program: &Path) -> Command {
    if is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(program);
        c
    } else {
        Command::new(program)
    }
}

/// Runs a cluster program; it must succeed.
fn run(program: &Path, args: &[&str]) {
    let out = command(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()));
    assert!(
        out.status.success(),
        "{} {args:?}: {}{}",
        program.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

impl PgCluster {
    /// Makes and starts a new cluster.
    pub fn start() -> PgCluster {
        let bin = programs();
        let dir = tempfile::tempdir().expect("a directory for the cluster");
        if is_root() {
            let ok = Command::new("chown")
                .args(["postgres:", &dir.path().to_string_lossy()])
                .status()
                .expect("chown");
            assert!(ok.success(), "the cluster's directory given to postgres");
        }
        let data = dir.path().join("data");
        run(
            &bin.join("initdb"),
            &[
                "-D",
                &data.to_string_lossy(),
                "-U",
                "anchorage",
                "-A",
                "trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        );
        let cluster = PgCluster {
            dir,
            bin,
            port: crate::helpers::free_port(),
        };
        cluster.up();
        cluster
    }

    /// The address of its `postgres` database.
    pub fn url(&self) -> String {
        format!("postgres://anchorage@127.0.0.1:{}/postgres", self.port)
    }

    fn pg_ctl(&self, action: &str, extra: &[&str]) {
        let data = self.dir.path().join("data");
        let log = self.dir.path().join("log");
        let socket = self.dir.path().to_string_lossy().into_owned();
        let options = format!(
            "-p {} -k {socket} -c listen_addresses=127.0.0.1 -c fsync=off \
             -c synchronous_commit=off -c full_page_writes=off",
            self.port
        );
        let mut args = vec![
            "-D",
            data.to_str().expect("a UTF-8 path"),
            "-l",
            log.to_str().expect("a UTF-8 path"),
            "-w",
            "-t",
            "60",
            "-o",
            &options,
        ];
        args.extend_from_slice(extra);
        args.push(action);
        run(&self.bin.join("pg_ctl"), &args);
    }

    /// Starts it (again).
    pub fn up(&self) {
        self.pg_ctl("start", &[]);
    }

    /// Stops it as an operator does (`-m fast`: every connection is ended).
    pub fn down(&self) {
        self.pg_ctl("stop", &["-m", "fast"]);
    }

    /// Restarts it (`-m fast`).
    pub fn restart(&self) {
        self.pg_ctl("restart", &["-m", "fast"]);
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let data = self.dir.path().join("data");
        let _ = command(&self.bin.join("pg_ctl"))
            .args(["-D", &data.to_string_lossy(), "-m", "immediate", "stop"])
            .output();
    }
}
