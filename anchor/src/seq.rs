//! Sequence numbers as the reference coerces them: with JS `Number()`, so `' '` is 0, `'0x10'`
//! is 16 and `'1e3'` is 1000, and a `true` stays the string `"true"` (quirk Q16 of the spec's
//! table; the server always sends integers).

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::js;
use crate::sanitize;

/// An event's sequence number: a finite number, or the string it was given when that string is
/// not a number (`"abc"`, `"Infinity"`). Journal rows always carry whole numbers.
#[derive(Clone, Debug, PartialEq)]
pub enum Seq {
    /// A finite number (`7`, `4.5`, `0x10` → 16).
    Num(f64),
    /// Anything that is not a finite number, kept as its string form.
    Text(String),
}

impl Seq {
    /// `coerceSeq(raw)`: absent, `null` and `""` give no sequence; every other value goes through
    /// `Number(String(raw))` and is kept as a number when that is finite, else as the string.
    ///
    /// Objects become `"[object Object]"` (the reference throws for a payload-level object seq,
    /// Quirk Q4; we never throw on input).
    pub fn coerce(raw: Option<&Value>) -> Option<Seq> {
        match raw {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.is_empty() => None,
            Some(Value::Number(n)) => Some(Seq::Num(js::number_as_f64(n))),
            Some(v) => Some(Seq::coerce_str(&js::to_js_string(v))),
        }
    }

    /// `Number(s)` when finite, else `s` itself.
    pub(crate) fn coerce_str(s: &str) -> Seq {
        let n = js::string_to_number(s);
        if n.is_finite() {
            Seq::Num(n)
        } else {
            Seq::Text(s.to_owned())
        }
    }

    /// [`Seq::coerce`] for a value taken from a payload, which the reference sanitizes first.
    pub(crate) fn coerce_payload(raw: Option<&Value>) -> Option<Seq> {
        match raw {
            Some(v @ (Value::Array(_) | Value::Object(_))) => {
                Seq::coerce(Some(&sanitize::sanitized(v, 1)))
            }
            other => Seq::coerce(other),
        }
    }

    /// `String(seq)`.
    pub fn to_js_string(&self) -> Cow<'_, str> {
        match self {
            Seq::Num(n) => Cow::Owned(js::f64_to_string(*n)),
            Seq::Text(s) => Cow::Borrowed(s),
        }
    }

    /// Appends `String(seq)` to `out`.
    pub(crate) fn write_js(&self, out: &mut String) {
        match self {
            Seq::Num(n) => js::write_f64(out, *n),
            Seq::Text(s) => out.push_str(s),
        }
    }

    /// The sequence as a journal position, when it is a non-negative whole number.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Seq::Num(n) if *n >= 0.0 && n.fract() == 0.0 && *n <= 9_007_199_254_740_992.0 => {
                Some(*n as u64)
            }
            _ => None,
        }
    }
}

impl From<u64> for Seq {
    fn from(n: u64) -> Self {
        Seq::Num(n as f64)
    }
}

impl fmt::Display for Seq {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_js_string())
    }
}

impl Serialize for Seq {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            // Whole numbers travel as JSON integers, as JSON.stringify writes them.
            Seq::Num(n) if n.fract() == 0.0 && n.abs() < 9.0e15 => {
                serializer.serialize_i64(*n as i64)
            }
            Seq::Num(n) => serializer.serialize_f64(*n),
            Seq::Text(s) => serializer.serialize_str(s),
        }
    }
}

impl<'de> Deserialize<'de> for Seq {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Number(n) => Ok(Seq::Num(js::number_as_f64(&n))),
            Value::String(s) => Ok(Seq::Text(s)),
            other => Err(serde::de::Error::custom(format!(
                "a sequence number is a number or a string, not {other}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn coerce(v: Value) -> Option<Seq> {
        Seq::coerce(Some(&v))
    }

    #[test]
    fn strings_go_through_js_number() {
        assert_eq!(coerce(json!(" 5 ")), Some(Seq::Num(5.0)));
        assert_eq!(coerce(json!(" ")), Some(Seq::Num(0.0)));
        assert_eq!(coerce(json!("0x10")), Some(Seq::Num(16.0)));
        assert_eq!(
            coerce(json!("Infinity")),
            Some(Seq::Text("Infinity".into()))
        );
        assert_eq!(coerce(json!([])), Some(Seq::Num(0.0)));
        assert_eq!(coerce(json!(true)), Some(Seq::Text("true".into())));
        assert_eq!(coerce(json!("")), None);
        assert_eq!(
            coerce(json!({"a": 1})),
            Some(Seq::Text("[object Object]".into()))
        );
    }

    #[test]
    fn whole_numbers_serialize_as_integers() {
        assert_eq!(serde_json::to_string(&Seq::Num(7.0)).unwrap(), "7");
        assert_eq!(serde_json::to_string(&Seq::Num(-0.0)).unwrap(), "0");
        assert_eq!(serde_json::to_string(&Seq::Num(4.5)).unwrap(), "4.5");
    }
}
