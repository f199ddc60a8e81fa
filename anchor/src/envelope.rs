//! The envelope's key tables: which keys of an input, and of its payload, the envelope is read
//! from. Each table is declared once, in the reference's precedence order, with every slot and
//! group named; the indices follow from the declaration, so no index is written by hand.
//! Normalization reads values by these names; [`crate::SourceEvent`] sorts an input's keys
//! into the same slots when it is built.

/// Declares a key table as a module: `KEYS` (every key, by slot), `LEN`, `SET` (the
/// [`crate::js::KeySet`] that finds them), `Slots` (the values found) and one constant per
/// name: a slot (`NAME = "key"`), a group of slots in precedence order (`NAME = ["a", "b"]`,
/// a range), or a named group of named slots (`NAME = { A = "a", B = "b" }`).
macro_rules! key_table {
    ($(#[$doc:meta])* $vis:vis mod $module:ident { $($body:tt)* }) => {
        $(#[$doc])*
        $vis mod $module {
            #![allow(dead_code)]
            use std::ops::Range;

            /// Every key, by slot.
            pub(crate) const KEYS: [&str; LEN] = key_table!(@keys []; $($body)*);
            /// How many keys the table has.
            pub(crate) const LEN: usize = key_table!(@count 0; $($body)*);
            /// Finds the table's keys in a map.
            pub(crate) const SET: crate::js::KeySet<LEN> = crate::js::KeySet::new(KEYS);
            /// The values of the table's keys in one object, by slot.
            pub(crate) type Slots<'a> = [Option<&'a serde_json::Value>; LEN];

            key_table!(@slots 0; $($body)*);
        }
    };

    // Every key in declaration order.
    (@keys [$($acc:literal),*];) => { [$($acc),*] };
    (@keys [$($acc:literal),*]; $(#[$m:meta])* $name:ident = $key:literal $(, $($rest:tt)*)?) => {
        key_table!(@keys [$($acc,)* $key]; $($($rest)*)?)
    };
    (@keys [$($acc:literal),*]; $(#[$m:meta])* $name:ident = [$($key:literal),+] $(, $($rest:tt)*)?) => {
        key_table!(@keys [$($acc,)* $($key),+]; $($($rest)*)?)
    };
    (@keys [$($acc:literal),*]; $(#[$m:meta])* $name:ident = { $($inner:tt)* } $(, $($rest:tt)*)?) => {
        key_table!(@keys [$($acc),*]; $($inner)* $(, $($rest)*)?)
    };

    // How many keys.
    (@count $n:expr;) => { $n };
    (@count $n:expr; $(#[$m:meta])* $name:ident = $key:literal $(, $($rest:tt)*)?) => {
        key_table!(@count $n + 1; $($($rest)*)?)
    };
    (@count $n:expr; $(#[$m:meta])* $name:ident = [$($key:literal),+] $(, $($rest:tt)*)?) => {
        key_table!(@count $n $(+ key_table!(@one $key))+; $($($rest)*)?)
    };
    (@count $n:expr; $(#[$m:meta])* $name:ident = { $($inner:tt)* } $(, $($rest:tt)*)?) => {
        key_table!(@count $n; $($inner)* $(, $($rest)*)?)
    };
    (@one $key:literal) => { 1 };

    // One constant per name.
    (@slots $n:expr;) => {};
    (@slots $n:expr; $(#[$m:meta])* $name:ident = $key:literal $(, $($rest:tt)*)?) => {
        $(#[$m])*
        pub(crate) const $name: usize = $n;
        key_table!(@slots $n + 1; $($($rest)*)?);
    };
    (@slots $n:expr; $(#[$m:meta])* $name:ident = [$($key:literal),+] $(, $($rest:tt)*)?) => {
        $(#[$m])*
        pub(crate) const $name: Range<usize> = $n..$n $(+ key_table!(@one $key))+;
        key_table!(@slots $n $(+ key_table!(@one $key))+; $($($rest)*)?);
    };
    (@slots $n:expr; $(#[$m:meta])* $name:ident = { $($inner:tt)* } $(, $($rest:tt)*)?) => {
        $(#[$m])*
        pub(crate) const $name: Range<usize> = $n..$n + key_table!(@count 0; $($inner)*);
        key_table!(@slots $n; $($inner)*);
        key_table!(@slots $n + key_table!(@count 0; $($inner)*); $($($rest)*)?);
    };
}

key_table! {
    /// The input's own keys the envelope is read from.
    pub(crate) mod input {
        /// Where the source type is named, first present wins.
        TYPES = ["source_event_type", "sourceType", "source_type", "event_type", "type", "event"],
        /// Where the journal identity is, first present wins.
        EVENT_IDS = ["event_id", "lastEventId", "last_event_id"],
        SEQ = "seq",
        SESSION = "session_id",
        TURN = "turn_id",
        RUN = "run_id",
        STREAM = "stream_id",
        CREATED_AT = "created_at",
        TIMESTAMP = "timestamp",
        /// The payload, else `data`. Last, so that everything before it is envelope.
        PAYLOAD = "payload",
        DATA = "data"
    }
}

key_table! {
    /// The payload's keys the envelope is read from.
    pub(crate) mod payload {
        /// Where the source type is named when the input does not name it.
        TYPES = ["source_event_type", "type", "event"],
        /// Lifted out of the payload into the envelope.
        IDENTITY = {
            EVENT_ID = "event_id",
            SEQ = "seq",
            SESSION = "session_id",
            TURN = "turn_id",
            RUN = "run_id",
            STREAM = "stream_id"
        },
        /// An explicit local identity, first present wins.
        LOCAL_IDS = ["local_id", "id", "tid", "tool_call_id", "tool_use_id", "call_id"],
        CREATED_AT = "created_at",
        TS = "ts",
        /// An explicit status, first present wins.
        STATUS = ["status", "state", "phase"],
        IS_ERROR = "is_error"
    }
}

/// Keys of a flattened input (one without `payload` or `data`) that are envelope, not payload.
pub(crate) const RESERVED_KEYS: &[&str] = input::KEYS.split_at(input::PAYLOAD).0;

/// The identity keys a payload loses once they are lifted into the envelope.
pub(crate) const IDENTITY_KEYS: &[&str] = payload::KEYS
    .split_at(payload::IDENTITY.end)
    .0
    .split_at(payload::IDENTITY.start)
    .1;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_and_groups_name_their_keys() {
        assert_eq!(input::LEN, 18);
        assert_eq!(input::KEYS[input::TYPES][0], "source_event_type");
        assert_eq!(
            &input::KEYS[input::EVENT_IDS],
            ["event_id", "lastEventId", "last_event_id"]
        );
        assert_eq!(input::KEYS[input::TIMESTAMP], "timestamp");
        assert_eq!(input::KEYS[input::DATA], "data");
        assert_eq!(input::SET.slot("stream_id"), Some(input::STREAM));

        assert_eq!(payload::LEN, 21);
        assert_eq!(payload::KEYS[payload::SEQ], "seq");
        assert_eq!(payload::KEYS[payload::STREAM], "stream_id");
        assert_eq!(payload::IDENTITY, payload::EVENT_ID..payload::STREAM + 1);
        assert_eq!(
            &payload::KEYS[payload::STATUS],
            ["status", "state", "phase"]
        );
        assert_eq!(payload::KEYS[payload::IS_ERROR], "is_error");
        assert_eq!(payload::SET.slot("tid"), Some(payload::LOCAL_IDS.start + 2));
    }

    #[test]
    fn envelope_keys_are_the_inputs_before_its_payload() {
        assert_eq!(RESERVED_KEYS.len(), 16);
        assert!(!RESERVED_KEYS.contains(&"payload") && !RESERVED_KEYS.contains(&"data"));
        let mut identity = IDENTITY_KEYS.to_vec();
        identity.sort_unstable();
        assert_eq!(
            identity,
            [
                "event_id",
                "run_id",
                "seq",
                "session_id",
                "stream_id",
                "turn_id"
            ]
        );
    }
}
