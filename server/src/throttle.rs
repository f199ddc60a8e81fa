//! What holds back guessing and floods from one address: sign-in attempts counted per name
//! and per address (every way in: a password, a passkey, a password confirmed), passkey
//! ceremonies begun per address, shared pages read per address, and a bound on how many
//! passwords are hashed at once.
//!
//! An attempt is counted **before** its password is hashed (a reservation, which a success
//! gives back): sixty attempts sent at once for one name find five places and fifty-five
//! refusals, instead of sixty hashes that all pass the check before any failure is written.
//! A success forgets its name's earlier failures, never its address's: nothing a stranger
//! sends (a passkey ceremony begun, a page read) resets a count.
//! Counts live in tables of at most [`MAX_KEYS`] names and addresses; a flood of new keys
//! drops only counts that have expired, never the live ones, and past that is refused.
//!
//! Hashing a password (argon2id) takes about 19 MiB and a core for a moment: at most one
//! per core runs at once, a few more wait their turn, and the rest are told to come back
//! (503 with `Retry-After`).
//!
//! All are per instance: several instances behind one address each count on their own.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

/// Failed sign-ins allowed per name and per address within [`THROTTLE_WINDOW`].
pub const THROTTLE_LIMIT: usize = 5;
/// The window failed sign-ins (and the other counts) are counted in.
pub const THROTTLE_WINDOW: Duration = Duration::from_secs(60);
/// Passkey sign-ins one address may begin within [`THROTTLE_WINDOW`].
pub const CEREMONY_LIMIT: usize = 10;
/// Shared pages one address may read within [`THROTTLE_WINDOW`].
pub const SHARE_VIEW_LIMIT: usize = 120;
/// Names and addresses counted at most, per count.
pub const MAX_KEYS: usize = 100_000;
/// Sign-ins that may wait for a hashing place (beyond those hashing).
pub const MAX_WAITING: usize = 32;
/// How long a sign-in waits for a hashing place before it is told to come back.
pub const HASH_WAIT: Duration = Duration::from_secs(10);

/// Why an attempt is not made now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// A name or address tried too often: try again after this long.
    TooMany(Duration),
    /// The server is busy hashing or counting too many others: try again after this long.
    Busy(Duration),
}

/// An attempt counted as failed until [`Counter::succeeded`] gives it back.
#[derive(Debug)]
pub struct Reservation {
    keys: Vec<String>,
    at: Instant,
}

#[derive(Debug, Default)]
struct Counts {
    keys: HashMap<String, VecDeque<Instant>>,
    swept: Option<Instant>,
}

/// Events per key (`name:…`, `ip:…`) within a window, at most `limit` each.
#[derive(Debug)]
pub struct Counter {
    counts: Mutex<Counts>,
    limit: usize,
    max_keys: usize,
}

impl Counter {
    /// A count of at most `limit` per key within [`THROTTLE_WINDOW`], over `max_keys` keys.
    pub fn new(limit: usize, max_keys: usize) -> Self {
        Counter {
            counts: Mutex::default(),
            limit,
            max_keys,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How long until every key of `keys` is under its limit again (`None`: they are now).
    fn wait(&self, counts: &mut Counts, keys: &[String], now: Instant) -> Option<Duration> {
        let mut wait = None;
        for key in keys {
            if let Some(times) = counts.keys.get_mut(key) {
                expire(times, now);
                if times.len() >= self.limit {
                    let first = times.front().copied().unwrap_or(now);
                    let left = THROTTLE_WINDOW.saturating_sub(now.duration_since(first));
                    wait = Some(wait.map_or(left, |w: Duration| w.max(left)));
                }
            }
        }
        wait
    }

    /// Whether `keys` may try now, counting nothing.
    pub fn check(&self, keys: &[String], now: Instant) -> Result<(), Refused> {
        let mut counts = self.lock();
        match self.wait(&mut counts, keys, now) {
            Some(wait) => Err(Refused::TooMany(wait)),
            None => Ok(()),
        }
    }

    /// Counts an attempt against `keys` as failed, unless one of them is at its limit (then
    /// how long until it may try again) or the table is full of live counts.
    pub fn reserve(&self, keys: &[String], now: Instant) -> Result<Reservation, Refused> {
        let mut counts = self.lock();
        if let Some(wait) = self.wait(&mut counts, keys, now) {
            return Err(Refused::TooMany(wait));
        }
        let new = keys
            .iter()
            .filter(|k| !counts.keys.contains_key(*k))
            .count();
        if counts.keys.len() + new > self.max_keys {
            // Drop what has expired (at most once a second: it walks the whole table).
            if counts
                .swept
                .is_none_or(|t| now.duration_since(t) >= Duration::from_secs(1))
            {
                counts.swept = Some(now);
                counts.keys.retain(|_, times| {
                    expire(times, now);
                    !times.is_empty()
                });
            }
            if counts.keys.len() + new > self.max_keys {
                return Err(Refused::Busy(Duration::from_secs(5)));
            }
        }
        for key in keys {
            let times = counts.keys.entry(key.clone()).or_default();
            times.push_back(now);
        }
        Ok(Reservation {
            keys: keys.to_vec(),
            at: now,
        })
    }

    /// The attempt signed in: its reservation is given back, and the earlier failures of
    /// the names it was counted against are forgotten (an address's never are).
    pub fn succeeded(&self, reservation: Reservation) {
        let mut counts = self.lock();
        for key in &reservation.keys {
            let Some(times) = counts.keys.get_mut(key) else {
                continue;
            };
            if key.starts_with(NAME) {
                times.clear();
            } else if let Some(at) = times.iter().position(|t| *t == reservation.at) {
                times.remove(at);
            }
            if times.is_empty() {
                counts.keys.remove(key);
            }
        }
    }

    /// Keys counted now.
    pub fn counted(&self) -> usize {
        self.lock().keys.len()
    }
}

/// The prefix of a name's key; an address's is [`ADDRESS`].
const NAME: &str = "name:";
/// The prefix of an address's key.
const ADDRESS: &str = "ip:";

/// The counts of a server: sign-ins, passkey ceremonies begun, shared pages read; and the
/// hashing places.
#[derive(Debug)]
pub struct Throttle {
    /// Failed sign-ins per name and per address (every way in counts here).
    pub sign_ins: Counter,
    /// Passkey sign-ins begun per address (each counts: none is given back).
    pub ceremonies: Counter,
    /// Shared pages read per address.
    pub share_views: Counter,
    hashing: Semaphore,
    places: usize,
    waiting: AtomicUsize,
}

impl Default for Throttle {
    fn default() -> Self {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        Throttle::new(cores, MAX_KEYS)
    }
}

/// The keys a sign-in counts against: the name (case folded) and the address (see
/// [`address_key`]).
pub fn keys(name: &str, ip: &str) -> [String; 2] {
    // A name is at most 64 characters: a longer one (no account's) is counted by its start,
    // so that nobody's made-up names make the table large.
    let name: String = name.to_lowercase().chars().take(NAME_CHARS).collect();
    [format!("{NAME}{name}"), address_key(ip)]
}

/// The characters of a name its key keeps (an account's name has at most 64).
const NAME_CHARS: usize = 65;

/// The key of an address: an IPv6 address by its /64, which one machine usually holds whole.
pub fn address_key(ip: &str) -> String {
    let ip = match ip.parse::<IpAddr>() {
        Ok(IpAddr::V6(v6)) if v6.to_ipv4_mapped().is_none() => {
            let s = v6.segments();
            format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
        }
        Ok(IpAddr::V6(v6)) => v6
            .to_ipv4_mapped()
            .map_or(ip.to_owned(), |v4| v4.to_string()),
        _ => ip.to_owned(),
    };
    format!("{ADDRESS}{ip}")
}

impl Throttle {
    /// A throttle hashing at most `hashing` passwords at once, each count over `max_keys`
    /// keys.
    pub fn new(hashing: usize, max_keys: usize) -> Self {
        Throttle {
            sign_ins: Counter::new(THROTTLE_LIMIT, max_keys),
            ceremonies: Counter::new(CEREMONY_LIMIT, max_keys),
            share_views: Counter::new(SHARE_VIEW_LIMIT, max_keys),
            hashing: Semaphore::new(hashing.max(1)),
            places: hashing.max(1),
            waiting: AtomicUsize::new(0),
        }
    }

    /// A sign-in attempt against `keys`, counted before it is checked (see
    /// [`Counter::reserve`]).
    pub fn reserve(&self, keys: &[String], now: Instant) -> Result<Reservation, Refused> {
        self.sign_ins.reserve(keys, now)
    }

    /// A sign-in attempt that signed in (see [`Counter::succeeded`]).
    pub fn succeeded(&self, reservation: Reservation) {
        self.sign_ins.succeeded(reservation);
    }

    /// Sign-in keys counted now.
    pub fn counted(&self) -> usize {
        self.sign_ins.counted()
    }
    /// Runs `hash` (a password check) once a hashing place is free; `Busy` when too many
    /// wait already, or none came free within [`HASH_WAIT`].
    pub async fn hash<T: Send + 'static>(
        &self,
        hash: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, Refused> {
        let busy = Refused::Busy(Duration::from_secs(2));
        // Those hashing hold a place and count as waiting too; the count is given back
        // however this ends, a client that hangs up (the request dropped mid-wait) too.
        let waiting = Waiting::take(&self.waiting);
        if waiting.before >= MAX_WAITING + self.places {
            return Err(busy);
        }
        let permit = tokio::time::timeout(HASH_WAIT, self.hashing.acquire()).await;
        match permit {
            Ok(Ok(_permit)) => tokio::task::spawn_blocking(hash).await.map_err(|_| busy),
            _ => Err(busy),
        }
    }
}

/// One more waiting for a hashing place, until dropped.
struct Waiting<'a> {
    count: &'a AtomicUsize,
    /// How many waited before this one.
    before: usize,
}

impl<'a> Waiting<'a> {
    fn take(count: &'a AtomicUsize) -> Self {
        let before = count.fetch_add(1, Ordering::SeqCst);
        Waiting { count, before }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Drops the times of `times` older than the window.
fn expire(times: &mut VecDeque<Instant>, now: Instant) {
    while times
        .front()
        .is_some_and(|t| now.duration_since(*t) >= THROTTLE_WINDOW)
    {
        times.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_count_before_they_are_checked_and_a_success_gives_its_place_back() {
        let throttle = Throttle::default();
        let t0 = Instant::now();
        let alice = keys("Alice", "1.2.3.4");
        assert_eq!(alice[0], "name:alice");
        let mut held = Vec::new();
        for _ in 0..THROTTLE_LIMIT {
            held.push(throttle.reserve(&alice, t0).expect("a place"));
        }
        // Five attempts in flight: the sixth is refused before anything is hashed.
        assert_eq!(
            throttle
                .reserve(&alice, t0 + Duration::from_secs(10))
                .unwrap_err(),
            Refused::TooMany(Duration::from_secs(50))
        );
        // Another name from the same address is held back too; another address is not.
        assert!(throttle.reserve(&keys("bob", "1.2.3.4"), t0).is_err());
        assert!(throttle.reserve(&keys("bob", "5.6.7.8"), t0).is_ok());
        // One of them was the right password: alice's failures are forgotten.
        throttle.succeeded(held.pop().unwrap());
        assert!(throttle.reserve(&keys("alice", "9.9.9.9"), t0).is_ok());
        // A minute later everything may try again.
        let later = t0 + THROTTLE_WINDOW;
        assert!(throttle.reserve(&alice, later).is_ok());
    }

    #[test]
    fn a_flood_of_other_keys_never_resets_a_live_count() {
        let throttle = Throttle::new(1, 100);
        let t0 = Instant::now();
        let target = keys("alice", "1.2.3.4");
        for _ in 0..THROTTLE_LIMIT {
            throttle.reserve(&target, t0).unwrap();
        }
        let mut refused = 0;
        for i in 0..1000 {
            let flood = keys(&format!("n{i}"), &format!("10.0.{}.{}", i / 250, i % 250));
            if throttle.reserve(&flood, t0).is_err() {
                refused += 1;
            }
        }
        assert!(refused > 900, "the table holds 100 keys: {refused}");
        assert!(throttle.counted() <= 100);
        assert!(matches!(
            throttle.reserve(&target, t0 + Duration::from_secs(1)),
            Err(Refused::TooMany(_))
        ));
        // Once the flood's counts expire, their room is used again.
        let later = t0 + THROTTLE_WINDOW + Duration::from_secs(1);
        assert!(throttle.reserve(&keys("carol", "7.7.7.7"), later).is_ok());
    }

    #[test]
    fn a_success_forgets_its_names_failures_never_an_addresss() {
        let throttle = Throttle::new(1, 100);
        let t0 = Instant::now();
        let address = [address_key("1.2.3.4")];
        for i in 0..(THROTTLE_LIMIT - 1) {
            throttle
                .reserve(&keys(&format!("n{i}"), "1.2.3.4"), t0)
                .unwrap();
        }
        // Something counted against the address alone (as a passkey is, whose name is
        // nobody's until it answers) and given back takes back its own count only.
        let passkey = throttle.reserve(&address, t0).unwrap();
        throttle.succeeded(passkey);
        // Checking counts nothing.
        assert!(throttle.sign_ins.check(&address, t0).is_ok());
        assert!(throttle.sign_ins.check(&address, t0).is_ok());
        throttle.reserve(&keys("last", "1.2.3.4"), t0).unwrap();
        assert!(matches!(
            throttle.sign_ins.check(&address, t0),
            Err(Refused::TooMany(_))
        ));
        assert!(throttle.reserve(&keys("next", "1.2.3.4"), t0).is_err());
    }

    #[test]
    fn ceremonies_and_shared_pages_are_counted_per_address_and_never_given_back() {
        let throttle = Throttle::default();
        let t0 = Instant::now();
        let here = [address_key("9.9.9.9")];
        for _ in 0..CEREMONY_LIMIT {
            throttle.ceremonies.reserve(&here, t0).unwrap();
        }
        assert!(throttle.ceremonies.reserve(&here, t0).is_err());
        assert!(throttle
            .ceremonies
            .reserve(&[address_key("9.9.9.8")], t0)
            .is_ok());
        // The sign-in count of the address is another count.
        assert!(throttle.sign_ins.check(&here, t0).is_ok());
        for _ in 0..SHARE_VIEW_LIMIT {
            throttle.share_views.reserve(&here, t0).unwrap();
        }
        assert!(throttle.share_views.reserve(&here, t0).is_err());
    }

    #[tokio::test]
    async fn a_sign_in_dropped_while_it_waits_gives_its_place_back() {
        let throttle = std::sync::Arc::new(Throttle::new(1, 10));
        let (hold, held) = std::sync::mpsc::channel::<()>();
        // One hashes (and holds the only place); the rest wait, then are dropped (their
        // clients hung up).
        let busy = {
            let throttle = throttle.clone();
            tokio::spawn(async move {
                throttle
                    .hash(move || {
                        let _ = held.recv();
                    })
                    .await
            })
        };
        let mut waiting = Vec::new();
        for _ in 0..(MAX_WAITING + 5) {
            let throttle = throttle.clone();
            waiting.push(tokio::spawn(async move { throttle.hash(|| ()).await }));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        for task in &waiting {
            task.abort();
        }
        for task in waiting {
            let _ = task.await;
        }
        hold.send(()).unwrap();
        busy.await.unwrap().unwrap();
        assert_eq!(throttle.waiting.load(Ordering::SeqCst), 0);
        assert!(throttle.hash(|| 7).await.is_ok(), "a place for the next");
    }

    #[test]
    fn a_long_made_up_name_is_counted_by_its_start() {
        let long = "x".repeat(10_000);
        assert_eq!(keys(&long, "1.2.3.4")[0].len(), "name:".len() + NAME_CHARS);
    }

    #[test]
    fn an_ipv6_address_counts_by_its_network() {
        assert_eq!(keys("a", "2001:db8:1:2:aaaa::1")[1], "ip:2001:db8:1:2::/64");
        assert_eq!(keys("a", "2001:db8:1:2:bbbb::9")[1], "ip:2001:db8:1:2::/64");
        assert_eq!(keys("a", "::ffff:10.0.0.1")[1], "ip:10.0.0.1");
        assert_eq!(keys("a", "unknown")[1], "ip:unknown");
    }

    #[tokio::test]
    async fn hashing_waits_for_a_place_and_too_many_waiting_are_turned_away() {
        let throttle = std::sync::Arc::new(Throttle::new(1, 10));
        let started = std::sync::Arc::new(AtomicUsize::new(0));
        let most = std::sync::Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..(MAX_WAITING + 40) {
            let (throttle, started, most) = (throttle.clone(), started.clone(), most.clone());
            tasks.push(tokio::spawn(async move {
                throttle
                    .hash(move || {
                        let now = started.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(5));
                        started.fetch_sub(1, Ordering::SeqCst);
                    })
                    .await
            }));
        }
        let mut busy = 0;
        for task in tasks {
            if task.await.unwrap().is_err() {
                busy += 1;
            }
        }
        assert_eq!(most.load(Ordering::SeqCst), 1, "one hash at a time");
        assert!(busy > 0, "some were turned away");
    }
}
