//! Rendered pages kept in memory, bounded by their bytes: a shared conversation is rendered
//! once (its snapshot never changes), not on every view. The oldest kept goes first when the
//! bound is reached; a page larger than the whole bound is not kept.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// What a server keeps of rendered shared pages at most, in bytes.
pub const SHARE_PAGES_BYTES: usize = 32 << 20;

/// Pages by key, at most `bound` bytes of them.
#[derive(Debug)]
pub struct Pages {
    inner: Mutex<Kept>,
    bound: usize,
}

#[derive(Debug, Default)]
struct Kept {
    pages: HashMap<String, Arc<str>>,
    /// Keys, oldest first.
    order: VecDeque<String>,
    bytes: usize,
}

impl Default for Pages {
    fn default() -> Self {
        Pages::new(SHARE_PAGES_BYTES)
    }
}

impl Pages {
    /// Pages of at most `bound` bytes in all.
    pub fn new(bound: usize) -> Self {
        Pages {
            inner: Mutex::default(),
            bound,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The page kept under `key`.
    pub fn get(&self, key: &str) -> Option<Arc<str>> {
        self.lock().pages.get(key).cloned()
    }

    /// Keeps `page` under `key`, the oldest giving way; answers it.
    pub fn put(&self, key: &str, page: String) -> Arc<str> {
        let page: Arc<str> = page.into();
        if page.len() > self.bound {
            return page;
        }
        let mut kept = self.lock();
        if let Some(old) = kept.pages.remove(key) {
            kept.bytes -= old.len();
            kept.order.retain(|k| k != key);
        }
        while kept.bytes + page.len() > self.bound {
            let Some(oldest) = kept.order.pop_front() else {
                break;
            };
            if let Some(gone) = kept.pages.remove(&oldest) {
                kept.bytes -= gone.len();
            }
        }
        kept.bytes += page.len();
        kept.order.push_back(key.to_owned());
        kept.pages.insert(key.to_owned(), Arc::clone(&page));
        page
    }

    /// Forgets the page kept under `key`.
    pub fn forget(&self, key: &str) {
        let mut kept = self.lock();
        if let Some(old) = kept.pages.remove(key) {
            kept.bytes -= old.len();
            kept.order.retain(|k| k != key);
        }
    }

    /// Bytes kept now.
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }
}

#[cfg(test)]
mod tests {
    use super::Pages;

    #[test]
    fn pages_are_kept_within_their_bound_the_oldest_going_first() {
        let pages = Pages::new(10);
        pages.put("a", "aaaa".into());
        pages.put("b", "bbbb".into());
        assert_eq!(pages.bytes(), 8);
        pages.put("c", "cccc".into());
        assert_eq!(pages.get("a"), None);
        assert_eq!(pages.get("b").as_deref(), Some("bbbb"));
        assert_eq!(pages.bytes(), 8);
        // Larger than the bound: answered, not kept.
        assert_eq!(&*pages.put("d", "d".repeat(11)), "d".repeat(11));
        assert_eq!(pages.get("d"), None);
        // Kept again under its key: counted once.
        pages.put("b", "bb".into());
        assert_eq!(pages.bytes(), 6);
        pages.forget("c");
        assert_eq!(pages.bytes(), 2);
    }
}
