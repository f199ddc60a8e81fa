//! The wall clock, in one place: every timestamp the server stores or compares is read here.

/// Seconds since the Unix epoch (0 if the system clock is set before it).
pub fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
