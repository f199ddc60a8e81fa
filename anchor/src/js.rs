//! JavaScript value semantics the reference relies on.
//!
//! The reference is written against arbitrary JS values; every derivation is phrased through a
//! handful of helpers (`own`, `firstOwn`, `clean`, truthiness, `String()`, `Number()`), and most
//! differences between a naive port and the reference come from their edge cases. They live here,
//! once, over `serde_json::Value`.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt::Write as _;

use serde_json::{Map, Value};

/// JS `WhiteSpace` and `LineTerminator` (what `trim()` and `\s` match). Unlike
/// `char::is_whitespace` it includes U+FEFF and excludes U+0085.
pub(crate) fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\u{0009}'..='\u{000D}'
            | '\u{0020}'
            | '\u{00A0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200A}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202F}'
            | '\u{205F}'
            | '\u{3000}'
            | '\u{FEFF}'
    )
}

/// `String.prototype.trim`.
pub(crate) fn trim(s: &str) -> &str {
    // Most strings start and end with a visible ASCII character: nothing to trim.
    match s.as_bytes() {
        [] => s,
        [first, .., last] | [first @ last] if is_plain(*first) && is_plain(*last) => s,
        _ => s.trim_matches(is_js_space),
    }
}

fn is_plain(b: u8) -> bool {
    b > b' ' && b < 0x80
}

/// A fixed set of keys to pick out of objects, indexed by length so that finding a key's slot
/// costs one comparison in the common case.
pub(crate) struct KeySet<const N: usize> {
    keys: [&'static str; N],
    // Bit i of `by_len[l]`: `keys[i]` has length `l`.
    by_len: [u32; 32],
}

impl<const N: usize> KeySet<N> {
    pub(crate) const fn new(keys: [&'static str; N]) -> Self {
        assert!(N <= 32, "at most 32 keys");
        let mut by_len = [0u32; 32];
        let mut i = 0;
        while i < N {
            let len = keys[i].len();
            assert!(len < 32, "keys are shorter than 32 bytes");
            by_len[len] |= 1 << i;
            i += 1;
        }
        KeySet { keys, by_len }
    }

    /// The key in slot `i`.
    pub(crate) fn key(&self, i: usize) -> &'static str {
        self.keys[i]
    }

    /// The slot of `key`, if it is one of the set's keys.
    pub(crate) fn slot(&self, key: &str) -> Option<usize> {
        let mut mask = *self.by_len.get(key.len())?;
        while mask != 0 {
            let i = mask.trailing_zeros() as usize;
            if self.keys[i] == key {
                return Some(i);
            }
            mask &= mask - 1;
        }
        None
    }

    /// Which of the set's keys `map` has, as bits by slot.
    pub(crate) fn mask(&self, map: &Map<String, Value>) -> u32 {
        map.keys()
            .filter_map(|k| self.slot(k))
            .fold(0, |mask, i| mask | 1 << i)
    }

    /// The values of the keys in `mask` (see [`KeySet::mask`]) in `map`; the others are not
    /// looked for.
    pub(crate) fn pick<'a>(
        &self,
        map: &'a Map<String, Value>,
        mask: u32,
    ) -> [Option<&'a Value>; N] {
        let mut found = [None; N];
        let mut bits = mask;
        while bits != 0 {
            let i = bits.trailing_zeros() as usize;
            found[i] = map.get(self.keys[i]);
            bits &= bits - 1;
        }
        found
    }

    /// The values of the set's keys in `map`, found in one pass over a small map (or by lookup
    /// in a large one). Equivalent to looking each key up.
    pub(crate) fn scan<'a>(&self, map: &'a Map<String, Value>) -> [Option<&'a Value>; N] {
        let mut found = [None; N];
        if map.len() > 2 * N {
            for (slot, key) in found.iter_mut().zip(self.keys) {
                *slot = map.get(key);
            }
            return found;
        }
        for (k, v) in map {
            if let Some(i) = self.slot(k) {
                found[i] = Some(v);
            }
        }
        found
    }
}

/// `firstOwn` over already scanned values: the first present, not `null`, not `""`.
pub(crate) fn first_present<'a>(values: &[Option<&'a Value>]) -> Option<&'a Value> {
    values.iter().copied().find_map(|v| match v {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(v) => Some(v),
    })
}

/// `clean(v)`: a trimmed string, or `""` for anything that is not a string.
pub(crate) fn clean(v: Option<&Value>) -> &str {
    match v {
        Some(Value::String(s)) => trim(s),
        _ => "",
    }
}

/// JS truthiness of a possibly absent value.
pub(crate) fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(_) | Value::Object(_)) => true,
    }
}

/// `own(v, k)`: the own property `k` of an object. Arrays have no own properties we ever ask
/// for (only indices and `length`), so they answer like scalars.
pub(crate) fn own<'a>(v: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    match v {
        Some(Value::Object(map)) => map.get(key),
        _ => None,
    }
}

/// `firstOwn(map, keys)`: the first value that is present, not `null` and not `""`.
pub(crate) fn first_own<'a>(map: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a Value> {
    keys.iter().find_map(|k| match map.get(*k) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(v) => Some(v),
    })
}

/// [`first_own`] over a value that may not be an object.
#[cfg(feature = "parity")]
pub(crate) fn first_own_in<'a>(v: Option<&'a Value>, keys: &[&str]) -> Option<&'a Value> {
    match v {
        Some(Value::Object(map)) => first_own(map, keys),
        _ => None,
    }
}

/// `a || b`: the first truthy of two possibly absent values, else the last one.
pub(crate) fn or<'a>(a: Option<&'a Value>, b: Option<&'a Value>) -> Option<&'a Value> {
    if truthy(a) {
        a
    } else {
        b
    }
}

/// `_textFromContentValue`: strings as they are; content-part arrays concatenated without a
/// separator; `{text}` / `{content}` objects unwrapped; anything else empty.
pub(crate) fn text(v: Option<&Value>) -> Cow<'_, str> {
    match v {
        Some(Value::String(s)) => Cow::Borrowed(s),
        Some(Value::Array(items)) => {
            let mut parts = items.iter().filter_map(|item| match item {
                Value::String(s) => Some(s.as_str()),
                Value::Object(map) => match first_own(map, &["text", "content"]) {
                    Some(Value::String(s)) => Some(s.as_str()),
                    _ => None,
                },
                _ => None,
            });
            match (parts.next(), parts.next()) {
                (None, _) => Cow::Borrowed(""),
                (Some(one), None) => Cow::Borrowed(one),
                (Some(a), Some(b)) => {
                    let mut out = String::with_capacity(a.len() + b.len());
                    out.push_str(a);
                    out.push_str(b);
                    parts.for_each(|p| out.push_str(p));
                    Cow::Owned(out)
                }
            }
        }
        Some(Value::Object(map)) => match first_own(map, &["text", "content"]) {
            Some(Value::String(s)) => Cow::Borrowed(s),
            _ => Cow::Borrowed(""),
        },
        _ => Cow::Borrowed(""),
    }
}

/// `_firstTextValue`: the first candidate whose [`text`] is not empty (whitespace counts).
pub(crate) fn first_text<'a>(
    candidates: impl IntoIterator<Item = Option<&'a Value>>,
) -> Cow<'a, str> {
    for candidate in candidates {
        let t = text(candidate);
        if !t.is_empty() {
            return t;
        }
    }
    Cow::Borrowed("")
}

/// `String(v)` for a JSON value.
pub(crate) fn to_js_string(v: &Value) -> Cow<'_, str> {
    match v {
        Value::Null => Cow::Borrowed("null"),
        Value::Bool(true) => Cow::Borrowed("true"),
        Value::Bool(false) => Cow::Borrowed("false"),
        Value::Number(n) => Cow::Owned(number_to_string(n)),
        Value::String(s) => Cow::Borrowed(s),
        Value::Array(items) => {
            let mut out = String::new();
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if !item.is_null() {
                    out.push_str(&to_js_string(item));
                }
            }
            Cow::Owned(out)
        }
        Value::Object(_) => Cow::Borrowed("[object Object]"),
    }
}

/// The `f64` a JSON number denotes in JS (integers beyond 2^53 round, as in `JSON.parse`).
pub(crate) fn number_as_f64(n: &serde_json::Number) -> f64 {
    n.as_f64().unwrap_or(0.0)
}

/// `String(n)` for a JSON number.
pub(crate) fn number_to_string(n: &serde_json::Number) -> String {
    const EXACT: u64 = 1 << 53;
    if let Some(u) = n.as_u64() {
        if u <= EXACT {
            return u.to_string();
        }
    } else if let Some(i) = n.as_i64() {
        if i.unsigned_abs() <= EXACT {
            return i.to_string();
        }
    }
    f64_to_string(number_as_f64(n))
}

/// ECMAScript `Number::toString(x)` (radix 10): shortest round-trip digits, plain notation for
/// exponents in (-7, 21), exponent notation outside.
pub(crate) fn f64_to_string(x: f64) -> String {
    let mut out = String::new();
    write_f64(&mut out, x);
    out
}

/// The decimal digits of `n` (what `write!` prints, without the formatting machinery).
fn write_whole(out: &mut String, n: i64) {
    if n < 0 {
        out.push('-');
    }
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = n.unsigned_abs();
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    out.extend(digits[at..].iter().map(|&d| char::from(d)));
}

/// Appends `String(x)` to `out`.
pub(crate) fn write_f64(out: &mut String, x: f64) {
    if x.is_nan() {
        out.push_str("NaN");
        return;
    }
    if x == 0.0 {
        out.push('0');
        return;
    }
    if x.is_infinite() {
        out.push_str(if x < 0.0 { "-Infinity" } else { "Infinity" });
        return;
    }
    if x.fract() == 0.0 && x.abs() < 9_007_199_254_740_992.0 {
        // Below 2^53 a whole number's shortest round-trip digits are all of its digits. Above,
        // ECMAScript prints the shortest digits padded with zeros (the general path below).
        write_whole(out, x as i64);
        return;
    }
    if x < 0.0 {
        out.push('-');
    }
    // Rust's `{:e}` prints the shortest digits that round-trip, like ECMAScript requires.
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let k = digits.len() as i32;
    let n = exp + 1;
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        out.push_str(&digits[..n as usize]);
        out.push('.');
        out.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        out.push_str(&digits[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if n - 1 < 0 { '-' } else { '+' });
        let _ = write!(out, "{}", (n - 1).abs());
    }
}

/// ECMAScript `Number(s)` for a string (`StringToNumber`).
pub(crate) fn string_to_number(s: &str) -> f64 {
    // Sequence numbers are plain digits: exact as an integer below 2^53, no float parsing.
    if !s.is_empty() && s.len() <= 15 && s.bytes().all(|b| b.is_ascii_digit()) {
        let n = s.bytes().fold(0u64, |n, b| n * 10 + u64::from(b - b'0'));
        return n as f64;
    }
    let t = trim(s);
    if t.is_empty() {
        return 0.0;
    }
    match t {
        "Infinity" | "+Infinity" => return f64::INFINITY,
        "-Infinity" => return f64::NEG_INFINITY,
        _ => {}
    }
    let bytes = t.as_bytes();
    if bytes.len() > 2 && bytes[0] == b'0' {
        let radix = match bytes[1] {
            b'x' | b'X' => 16,
            b'o' | b'O' => 8,
            b'b' | b'B' => 2,
            _ => 0,
        };
        if radix != 0 {
            return radix_to_number(&t[2..], radix);
        }
    }
    if is_decimal_literal(bytes) {
        t.parse::<f64>().unwrap_or(f64::NAN)
    } else {
        f64::NAN
    }
}

fn radix_to_number(digits: &str, radix: u32) -> f64 {
    let mut value = 0f64;
    for c in digits.chars() {
        match c.to_digit(radix) {
            Some(d) => value = value * f64::from(radix) + f64::from(d),
            None => return f64::NAN,
        }
    }
    value
}

/// `StrDecimalLiteral` without `Infinity`: `[+-]? (d+ (. d*)? | . d+) ([eE] [+-]? d+)?`.
fn is_decimal_literal(b: &[u8]) -> bool {
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let int_digits = i - int_start;
    let mut frac_digits = 0;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let frac_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        frac_digits = i - frac_start;
    }
    if int_digits == 0 && frac_digits == 0 {
        return false;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let exp_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == exp_start {
            return false;
        }
    }
    i == b.len()
}

/// Orders strings by UTF-16 code units, as JS `sort()` and `<` do.
pub(crate) fn cmp_utf16(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// Length of a string in UTF-16 code units (JS `length`).
pub(crate) fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// `JSON.stringify` of a string, appended to `out`.
pub(crate) fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    write_json_escaped(out, s);
    out.push('"');
}

/// The inside of `JSON.stringify(s)`, without the quotes.
pub(crate) fn write_json_escaped(out: &mut String, s: &str) {
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            b'\t' => "\\t",
            b'\n' => "\\n",
            0x0C => "\\f",
            b'\r' => "\\r",
            0..=0x1F => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{:04x}", b);
        } else {
            out.push_str(escape);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
}

/// How object keys are ordered when a value is written as JSON text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KeyOrder {
    /// JS property order of an object whose keys were inserted sorted (what the sanitizer
    /// builds): canonical array-index keys first in numeric order, then the rest by UTF-16.
    JsProperty,
    /// Every key by UTF-16 code units (the differential harness's canonical form).
    #[cfg_attr(not(feature = "parity"), allow(dead_code))]
    Utf16,
}

/// Writes `v` as compact JSON text with JS number formatting and the given key order.
pub(crate) fn write_json(out: &mut String, v: &Value, order: KeyOrder) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number_to_string(n)),
        Value::String(s) => write_json_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(out, item, order);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            match order {
                KeyOrder::Utf16 => keys.sort_by(|a, b| cmp_utf16(a, b)),
                KeyOrder::JsProperty => {
                    keys.sort_by(|a, b| match (array_index(a), array_index(b)) {
                        (Some(x), Some(y)) => x.cmp(&y),
                        (Some(_), None) => Ordering::Less,
                        (None, Some(_)) => Ordering::Greater,
                        (None, None) => cmp_utf16(a, b),
                    })
                }
            }
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(out, key);
                out.push(':');
                write_json(out, &map[key.as_str()], order);
            }
            out.push('}');
        }
    }
}

/// A canonical array index (`"0"`, `"7"`, `"112"`, up to 2^32 − 2), as JS orders property keys.
fn array_index(key: &str) -> Option<u32> {
    let b = key.as_bytes();
    if b.is_empty() || (b.len() > 1 && b[0] == b'0') || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    key.parse::<u64>()
        .ok()
        .filter(|n| *n < u64::from(u32::MAX))
        .map(|n| n as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn trim_uses_the_js_whitespace_set() {
        assert_eq!(trim("\u{FEFF} a \u{3000}"), "a");
        assert_eq!(trim("\u{0085}a"), "\u{0085}a");
    }

    #[test]
    fn numbers_print_like_ecmascript() {
        for (x, s) in [
            (0.1, "0.1"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (123.456, "123.456"),
            (1e-7, "1e-7"),
            (0.000001, "0.000001"),
            (-0.0, "0"),
            (1781200012.5, "1781200012.5"),
            (1.5e-10, "1.5e-10"),
            (-2.5e30, "-2.5e+30"),
            (4.0, "4"),
            (9_007_199_254_740_991.0, "9007199254740991"),
            (1_152_921_504_606_846_976.0, "1152921504606847000"),
            (-1_152_921_504_606_846_976.0, "-1152921504606847000"),
            (123_456_789_012_345_680_000.0, "123456789012345680000"),
        ] {
            assert_eq!(f64_to_string(x), s, "{x}");
        }
        assert_eq!(
            number_to_string(&serde_json::Number::from(12345678901234567890u64)),
            "12345678901234567000"
        );
    }

    #[test]
    fn string_to_number_follows_the_js_grammar() {
        assert_eq!(string_to_number(" 5 "), 5.0);
        assert_eq!(string_to_number(" "), 0.0);
        assert_eq!(string_to_number("0x10"), 16.0);
        assert_eq!(string_to_number("007"), 7.0);
        assert_eq!(string_to_number("999999999999999"), 999_999_999_999_999.0);
        assert_eq!(
            string_to_number("1152921504606846976"),
            1_152_921_504_606_846_976.0
        );
        assert_eq!(string_to_number("1e3"), 1000.0);
        assert_eq!(string_to_number(".5"), 0.5);
        assert_eq!(string_to_number("5."), 5.0);
        assert!(string_to_number("-0b11").is_nan());
        assert!(string_to_number("1_000").is_nan());
        assert!(string_to_number("inf").is_nan());
        assert!(string_to_number("abc").is_nan());
        assert!(string_to_number("Infinity").is_infinite());
    }

    #[test]
    fn text_concatenates_parts_without_separators() {
        let parts =
            json!([{"type": "text", "text": "a"}, "b", {"content": "c"}, {"type": "tool_use"}, 7]);
        assert_eq!(text(Some(&parts)), "abc");
        assert_eq!(text(Some(&json!({"text": 5, "content": "x"}))), "");
    }

    #[test]
    fn json_strings_escape_like_json_stringify() {
        let mut out = String::new();
        write_json_string(&mut out, "ré:1\"q\u{1}\u{7f}\u{2028}\n");
        assert_eq!(out, "\"ré:1\\\"q\\u0001\u{7f}\u{2028}\\n\"");
    }

    #[test]
    fn js_property_order_puts_array_indices_first() {
        let v = json!({"b": 1, "10": 2, "a": 3, "9": 4, "01": 5});
        let mut out = String::new();
        write_json(&mut out, &v, KeyOrder::JsProperty);
        assert_eq!(out, r#"{"9":4,"10":2,"01":5,"a":3,"b":1}"#);
    }
}
