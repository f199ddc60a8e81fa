//! Counters, gauges and histograms with labels, written in Prometheus's text exposition format
//! (version 0.0.4). Each family keeps at most [`MAX_SERIES`] label combinations: the labels
//! come from small fixed sets (a backend, a terminal state, a route as the router names it, a
//! status), and a bound keeps a surprise from growing memory.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;

/// The most label combinations one family keeps; later ones are not counted.
pub const MAX_SERIES: usize = 1_000;

/// A family of counters, one per combination of its labels' values.
pub struct Counters {
    name: &'static str,
    help: &'static str,
    labels: &'static [&'static str],
    series: Mutex<BTreeMap<Vec<String>, u64>>,
}

impl Counters {
    /// A family named `name` (ending in `_total`), labelled by `labels`.
    pub const fn new(
        name: &'static str,
        help: &'static str,
        labels: &'static [&'static str],
    ) -> Self {
        Counters {
            name,
            help,
            labels,
            series: Mutex::new(BTreeMap::new()),
        }
    }

    /// Adds `n` to the counter of `values` (one per label, in order).
    pub fn add(&self, values: &[&str], n: u64) {
        let mut series = self.series.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = entry(&mut series, values, || 0) {
            *count += n;
        }
    }

    /// Adds one.
    pub fn inc(&self, values: &[&str]) {
        self.add(values, 1);
    }

    /// The counter of `values` (0 when never counted).
    pub fn get(&self, values: &[&str]) -> u64 {
        let key: Vec<String> = values.iter().map(|v| (*v).to_owned()).collect();
        let series = self.series.lock().unwrap_or_else(|e| e.into_inner());
        series.get(&key).copied().unwrap_or(0)
    }

    pub(super) fn write(&self, out: &mut String) {
        head(out, self.name, self.help, "counter");
        let series = self.series.lock().unwrap_or_else(|e| e.into_inner());
        for (values, count) in series.iter() {
            let _ = writeln!(
                out,
                "{}{} {count}",
                self.name,
                label_set(self.labels, values, None)
            );
        }
    }
}

/// A value that goes up and down.
pub struct Gauge {
    name: &'static str,
    help: &'static str,
    value: AtomicI64,
}

impl Gauge {
    /// A gauge named `name`.
    pub const fn new(name: &'static str, help: &'static str) -> Self {
        Gauge {
            name,
            help,
            value: AtomicI64::new(0),
        }
    }

    /// Adds `n` (negative: takes away).
    pub fn add(&self, n: i64) {
        self.value.fetch_add(n, Ordering::Relaxed);
    }

    /// Its value now.
    pub fn get(&self) -> i64 {
        self.value.load(Ordering::Relaxed)
    }

    pub(super) fn write(&self, out: &mut String) {
        head(out, self.name, self.help, "gauge");
        let _ = writeln!(out, "{} {}", self.name, self.get());
    }
}

/// One histogram's state: how many observations fell at or under each bound, their sum and
/// their count.
#[derive(Clone, Debug)]
struct Buckets {
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

/// A family of histograms over fixed bucket bounds.
pub struct Histograms {
    name: &'static str,
    help: &'static str,
    labels: &'static [&'static str],
    bounds: &'static [f64],
    series: Mutex<BTreeMap<Vec<String>, Buckets>>,
}

impl Histograms {
    /// A family named `name`, labelled by `labels`, over the upper bounds `bounds` (in
    /// increasing order; `+Inf` is added).
    pub const fn new(
        name: &'static str,
        help: &'static str,
        labels: &'static [&'static str],
        bounds: &'static [f64],
    ) -> Self {
        Histograms {
            name,
            help,
            labels,
            bounds,
            series: Mutex::new(BTreeMap::new()),
        }
    }

    /// Counts an observation of `value` for `values`.
    pub fn observe(&self, values: &[&str], value: f64) {
        if !value.is_finite() {
            return;
        }
        let mut series = self.series.lock().unwrap_or_else(|e| e.into_inner());
        let bounds = self.bounds;
        let Some(buckets) = entry(&mut series, values, || Buckets {
            counts: vec![0; bounds.len()],
            sum: 0.0,
            count: 0,
        }) else {
            return;
        };
        // Stored per bucket; written cumulatively.
        if let Some(i) = bounds.iter().position(|b| value <= *b) {
            buckets.counts[i] += 1;
        }
        buckets.sum += value;
        buckets.count += 1;
    }

    /// How many observations `values` has.
    pub fn count(&self, values: &[&str]) -> u64 {
        let key: Vec<String> = values.iter().map(|v| (*v).to_owned()).collect();
        let series = self.series.lock().unwrap_or_else(|e| e.into_inner());
        series.get(&key).map_or(0, |b| b.count)
    }

    pub(super) fn write(&self, out: &mut String) {
        head(out, self.name, self.help, "histogram");
        let series = self.series.lock().unwrap_or_else(|e| e.into_inner());
        for (values, buckets) in series.iter() {
            let mut below = 0;
            for (bound, n) in self.bounds.iter().zip(&buckets.counts) {
                below += n;
                let le = format_float(*bound);
                let _ = writeln!(
                    out,
                    "{}_bucket{} {below}",
                    self.name,
                    label_set(self.labels, values, Some(&le))
                );
            }
            let _ = writeln!(
                out,
                "{}_bucket{} {}",
                self.name,
                label_set(self.labels, values, Some("+Inf")),
                buckets.count
            );
            let labels = label_set(self.labels, values, None);
            let _ = writeln!(
                out,
                "{}_sum{labels} {}",
                self.name,
                format_float(buckets.sum)
            );
            let _ = writeln!(out, "{}_count{labels} {}", self.name, buckets.count);
        }
    }
}

/// The series of `values`, made when new and there is room.
fn entry<'a, V>(
    series: &'a mut BTreeMap<Vec<String>, V>,
    values: &[&str],
    new: impl FnOnce() -> V,
) -> Option<&'a mut V> {
    let key: Vec<String> = values.iter().map(|v| (*v).to_owned()).collect();
    if !series.contains_key(&key) && series.len() >= MAX_SERIES {
        return None;
    }
    Some(series.entry(key).or_insert_with(new))
}

/// A metric without labels: its head and its one value.
pub(super) fn write_plain(out: &mut String, name: &str, help: &str, kind: &str, value: u64) {
    head(out, name, help, kind);
    let _ = writeln!(out, "{name} {value}");
}

fn head(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(
        out,
        "# HELP {name} {}",
        help.replace('\\', r"\\").replace('\n', r"\n")
    );
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// `{a="x",b="y"}` (with `le` last for a histogram's bucket), or nothing without labels.
fn label_set(names: &[&str], values: &[String], le: Option<&str>) -> String {
    let mut pairs: Vec<String> = names
        .iter()
        .zip(values)
        .map(|(name, value)| format!("{name}=\"{}\"", escape(value)))
        .collect();
    if let Some(le) = le {
        pairs.push(format!("le=\"{le}\""));
    }
    if pairs.is_empty() {
        String::new()
    } else {
        format!("{{{}}}", pairs.join(","))
    }
}

/// A label value as the format quotes it.
fn escape(value: &str) -> String {
    value
        .replace('\\', r"\\")
        .replace('"', "\\\"")
        .replace('\n', r"\n")
}

/// A number as Prometheus reads it (`0.25`, `1`, `+Inf`).
fn format_float(x: f64) -> String {
    if x == f64::INFINITY {
        "+Inf".to_owned()
    } else {
        format!("{x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_histograms_and_gauges_are_written_as_prometheus_reads_them() {
        let runs = Counters::new("t_runs_total", "Runs.", &["backend", "state"]);
        runs.inc(&["demo", "completed"]);
        runs.add(&["demo", "completed"], 2);
        runs.inc(&["we\"ird\\", "x\ny"]);
        let mut out = String::new();
        runs.write(&mut out);
        assert_eq!(
            out,
            "# HELP t_runs_total Runs.\n# TYPE t_runs_total counter\n\
             t_runs_total{backend=\"demo\",state=\"completed\"} 3\n\
             t_runs_total{backend=\"we\\\"ird\\\\\",state=\"x\\ny\"} 1\n"
        );

        let h = Histograms::new("t_seconds", "Time.", &["backend"], &[0.1, 1.0]);
        h.observe(&["demo"], 0.05);
        h.observe(&["demo"], 0.5);
        h.observe(&["demo"], 5.0);
        h.observe(&["demo"], f64::NAN);
        let mut out = String::new();
        h.write(&mut out);
        assert_eq!(
            out,
            "# HELP t_seconds Time.\n# TYPE t_seconds histogram\n\
             t_seconds_bucket{backend=\"demo\",le=\"0.1\"} 1\n\
             t_seconds_bucket{backend=\"demo\",le=\"1\"} 2\n\
             t_seconds_bucket{backend=\"demo\",le=\"+Inf\"} 3\n\
             t_seconds_sum{backend=\"demo\"} 5.55\n\
             t_seconds_count{backend=\"demo\"} 3\n"
        );

        let g = Gauge::new("t_open", "Open.");
        g.add(2);
        g.add(-1);
        let mut out = String::new();
        g.write(&mut out);
        assert_eq!(out, "# HELP t_open Open.\n# TYPE t_open gauge\nt_open 1\n");
    }

    #[test]
    fn a_family_keeps_a_bounded_number_of_series() {
        let c = Counters::new("t_total", "T.", &["k"]);
        for i in 0..MAX_SERIES + 50 {
            c.inc(&[&i.to_string()]);
        }
        assert_eq!(c.series.lock().unwrap().len(), MAX_SERIES);
        // A known series still counts.
        c.inc(&["0"]);
        assert_eq!(c.get(&["0"]), 2);
    }
}
