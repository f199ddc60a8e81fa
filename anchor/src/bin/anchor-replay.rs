//! `anchor-replay`: runs a differential trace through the anchor and prints the
//! canonical JSON document, or times it.
//!
//! ```text
//! anchor-replay TRACE.jsonl [--mode M] [--entry sequential|shadow]
//! anchor-replay --bench REPS TRACE.jsonl [--mode M]
//! ```

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anchor::trace::Trace;

const USAGE: &str = "usage: anchor-replay TRACE.jsonl [--mode compact_worklog|transparent_stream|hide_all_activity] [--entry sequential|shadow]\n       anchor-replay --bench REPS TRACE.jsonl [--mode M]";

struct Args {
    trace: String,
    mode: Option<String>,
    entry: Option<String>,
    bench: Option<u32>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let mut trace = None;
    let mut mode = None;
    let mut entry = None;
    let mut bench = None;
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--mode" => mode = Some(value("--mode")?),
            "--entry" => entry = Some(value("--entry")?),
            "--bench" => {
                let reps = value("--bench")?;
                bench = Some(reps.parse::<u32>().ok().filter(|n| *n > 0).ok_or_else(|| {
                    format!("--bench needs a positive number of repetitions, not {reps:?}")
                })?);
            }
            "-h" | "--help" => return Err(String::new()),
            flag if flag.starts_with("--") => return Err(format!("unknown flag {flag}")),
            path if trace.is_none() => trace = Some(path.to_owned()),
            extra => return Err(format!("unexpected argument {extra:?}")),
        }
    }
    let trace = trace.ok_or("missing TRACE.jsonl")?;
    Ok(Args {
        trace,
        mode,
        entry,
        bench,
    })
}

fn median(mut samples: Vec<Duration>) -> f64 {
    samples.sort();
    let mid = samples.len() / 2;
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    if samples.len() % 2 == 1 {
        ms(samples[mid])
    } else {
        (ms(samples[mid - 1]) + ms(samples[mid])) / 2.0
    }
}

fn run(args: Args) -> Result<(), String> {
    let text =
        std::fs::read_to_string(&args.trace).map_err(|e| format!("reading {}: {e}", args.trace))?;
    let trace = Trace::parse(&text).map_err(|e| format!("{}: {e}", args.trace))?;
    let mode = trace
        .mode(args.mode.as_deref())
        .map_err(|e| e.to_string())?;
    let Some(reps) = args.bench else {
        let entry = trace
            .entry(args.entry.as_deref())
            .map_err(|e| e.to_string())?;
        let run = trace.run(mode, entry).map_err(|e| e.to_string())?;
        println!("{run}");
        return Ok(());
    };
    let mut apply = Vec::new();
    let mut project = Vec::new();
    let mut applied = 0u64;
    for _ in 0..reps {
        let start = Instant::now();
        let mut registry = trace.registry().map_err(|e| e.to_string())?;
        registry.apply_batch(
            trace.lines.iter().map(|l| (&l.event, &*l.context)),
            |applied| {
                let _ = std::hint::black_box(applied);
            },
        );
        apply.push(start.elapsed());
        applied = registry.stats().applied;

        // The projection: every row's view, with what a list of rows shows (id, kind, role,
        // status, text, group).
        let start = Instant::now();
        let scene = registry.scene(mode);
        for row in scene.rows() {
            std::hint::black_box((
                row.row_id(),
                row.group(),
                row.role(),
                row.status(),
                row.text(),
            ));
        }
        project.push(start.elapsed());
        std::hint::black_box(&scene);
    }
    println!(
        "{}",
        serde_json::json!({
            "apply_ms_median": median(apply),
            "project_ms_median": median(project),
            "lines": trace.lines.len(),
            "applied": applied,
        })
    );
    Ok(())
}

fn main() -> ExitCode {
    match parse_args().and_then(run) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("anchor-replay: {message}");
            }
            eprintln!("{USAGE}");
            ExitCode::from(2)
        }
    }
}
