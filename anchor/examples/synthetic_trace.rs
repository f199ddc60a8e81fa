//! Prints the benchmark turn the reference uses as a trace for `anchor-replay`.
//!
//! `cargo run --release -p anchor --example synthetic_trace -- 100000 > turn-100k.jsonl`

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000)
        .max(2);
    let seed: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(42);
    print!("{}", anchor::synthetic::benchmark_trace(n, seed));
}
