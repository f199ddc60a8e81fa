//! Criterion benchmarks over generated turns of 1k, 10k and 100k events: every
//! event applied as a live SSE frame, the whole journal replayed as duplicates, then the settled
//! message; and the projection of the resulting scene.

use std::hint::black_box;

use anchor::synthetic::{self, RUN, SESSION};
use anchor::{Mode, Registry, Seed, SourceEvent};
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use serde_json::{json, Value};

const SIZES: [usize; 3] = [1_000, 10_000, 100_000];

fn registry() -> Registry {
    Registry::new(&Seed::new(SESSION).stream(RUN)).unwrap()
}

/// Times `fill` on a fresh registry; the registry is dropped outside the timing.
fn bench_fresh(b: &mut criterion::Bencher<'_>, fill: impl Fn(&mut Registry)) {
    b.iter_batched(
        || (),
        |()| {
            let mut r = registry();
            fill(&mut r);
            r
        },
        BatchSize::PerIteration,
    )
}

fn apply_all(inputs: &[(&str, Value)], ctx: &Value) -> Registry {
    let mut r = registry();
    for (_, input) in inputs {
        let _ = black_box(r.apply(input, ctx));
    }
    r
}

/// The turn applied from JSON values one call at a time, and from the same inputs as
/// [`SourceEvent`]s (envelope keys sorted into slots when the input was built) in one
/// `apply_batch` call, as `anchor-replay` applies a trace.
fn bench_apply(c: &mut Criterion) {
    let ctx = json!({"session_id": SESSION, "stream_id": RUN});
    let mut group = c.benchmark_group("apply_turn");
    group.sample_size(10);
    for n in SIZES {
        let inputs = synthetic::benchmark_inputs(n, 42);
        group.throughput(Throughput::Elements(inputs.len() as u64));
        group.bench_with_input(BenchmarkId::new("value", n), &inputs, |b, inputs| {
            bench_fresh(b, |r| {
                for (_, input) in inputs {
                    let _ = black_box(r.apply(input, &ctx));
                }
            })
        });
        // Read from JSON text, as `anchor-replay` reads a trace (moving the values out of
        // `inputs` instead would leave their freed keys scattered through the heap, and the
        // registry's allocations would land among them).
        let sources: Vec<SourceEvent> = inputs
            .iter()
            .map(|(_, input)| serde_json::from_str(&input.to_string()).unwrap())
            .collect();
        group.bench_with_input(BenchmarkId::new("source", n), &sources, |b, sources| {
            bench_fresh(b, |r| {
                r.apply_batch(sources.iter().map(|s| (s, &ctx)), |applied| {
                    let _ = black_box(applied);
                })
            })
        });
    }
    group.finish();
}

/// The projection: every row's view with what a list of rows shows (id, kind, role, status,
/// text, group), as `anchor-replay --bench` times it.
fn bench_project(c: &mut Criterion) {
    let ctx = json!({"session_id": SESSION, "stream_id": RUN});
    let mut group = c.benchmark_group("project_scene");
    group.sample_size(20);
    for n in SIZES {
        let r = apply_all(&synthetic::benchmark_inputs(n, 42), &ctx);
        group.throughput(Throughput::Elements(r.row_count() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &r, |b, r| {
            b.iter(|| {
                let scene = r.scene(Mode::TransparentStream);
                for row in scene.rows() {
                    black_box((
                        row.row_id(),
                        row.group(),
                        row.role(),
                        row.status(),
                        row.text(),
                    ));
                }
                black_box(scene.rows().len())
            })
        });
    }
    group.finish();
}

/// The detail views a renderer builds when a row is shown: tool calls and reasoning previews.
fn bench_details(c: &mut Criterion) {
    let ctx = json!({"session_id": SESSION, "stream_id": RUN});
    let mut group = c.benchmark_group("row_details");
    group.sample_size(20);
    for n in SIZES {
        let r = apply_all(&synthetic::benchmark_inputs(n, 42), &ctx);
        group.throughput(Throughput::Elements(r.row_count() as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &r, |b, r| {
            let scene = r.scene(Mode::TransparentStream);
            b.iter(|| {
                for row in scene.rows() {
                    if let Some(tool) = row.tool() {
                        black_box((tool.name, tool.signature()));
                    }
                    if let Some(thinking) = row.thinking() {
                        black_box(thinking.preview());
                    }
                }
            })
        });
    }
    group.finish();
}

/// What the browser does per SSE frame: build the input from the frame's parts (event name,
/// data text, id) and apply it, as a JSON object or as a [`SourceEvent`] made from the parts.
fn bench_frames(c: &mut Criterion) {
    let ctx = json!({"session_id": SESSION, "stream_id": RUN});
    let frames: Vec<(&str, String, String)> = synthetic::turn(10_000, 42)
        .iter()
        .map(|e| (e.kind, e.payload.to_string(), e.event_id()))
        .collect();
    let mut group = c.benchmark_group("live_frames_10k");
    group.sample_size(20);
    group.throughput(Throughput::Elements(frames.len() as u64));
    group.bench_function("json_object", |b| {
        bench_fresh(b, |r| {
            for (kind, data, id) in &frames {
                let frame = json!({"type": kind, "data": data, "lastEventId": id});
                let _ = black_box(r.apply(&frame, &ctx));
            }
        })
    });
    group.bench_function("source_event_from_parts", |b| {
        bench_fresh(b, |r| {
            for (kind, data, id) in &frames {
                let frame = SourceEvent::live_frame(kind, data, Some(id));
                let _ = black_box(r.apply(&frame, &ctx));
            }
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    bench_apply,
    bench_project,
    bench_details,
    bench_frames
);
criterion_main!(benches);
