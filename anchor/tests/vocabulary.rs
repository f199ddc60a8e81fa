//! The browser tests' list of the kinds that become rows (`end2end/tests/support.ts`) is the
//! anchor's own: a kind added to [`EventKind`] without its helpers fails here, not in a flaky
//! row count in Chromium.

use anchor::{classify, Classification, EventKind};

fn playwright_activity_kinds() -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../end2end/tests/support.ts");
    let text = std::fs::read_to_string(path).expect("end2end/tests/support.ts");
    let start = text
        .find("export const ACTIVITY = new Set([")
        .expect("support.ts defines ACTIVITY");
    let list = &text[start..];
    let list = &list[list.find('[').unwrap() + 1..list.find("])").unwrap()];
    let mut kinds: Vec<String> = list
        .split(',')
        .map(|k| k.trim().trim_matches('"').to_owned())
        .filter(|k| !k.is_empty())
        .collect();
    kinds.sort();
    kinds
}

#[test]
fn the_browser_tests_count_exactly_the_activity_kinds() {
    let mut ours: Vec<String> = EventKind::ALL
        .iter()
        .filter(|k| k.is_activity())
        .map(|k| k.name().to_owned())
        .collect();
    ours.sort();
    assert_eq!(playwright_activity_kinds(), ours);
}

#[test]
fn classify_reads_the_vocabulary_and_excludes_everything_else() {
    for &kind in EventKind::ALL {
        assert_eq!(classify(kind.name()), kind.meta(), "{kind}");
    }
    for name in ["", "tokens", "TOKEN", "constructor", "stream-end"] {
        assert_eq!(classify(name).classification, Classification::Excluded);
        assert_eq!(classify(name).name, None);
    }
}
