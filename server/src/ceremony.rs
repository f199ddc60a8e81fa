//! A passkey ceremony carried by the browser between its two requests (pure: no IO).
//!
//! `start` seals the state webauthn-rs will check the answer against (with whose the ceremony
//! is, its kind, its expiry and a nonce) under the server's key, and hands it to the browser
//! as the ceremony's id; `finish` opens it and checks the seal. Nothing is kept per ceremony
//! begun, so nobody can crowd out a person's ceremony by beginning many of their own: the
//! server keeps only the nonces of the ceremonies answered (until they expire), so that each
//! is answered once.
//!
//! The seal is HMAC-SHA256 over the sealed bytes; the key is the server's (one per database,
//! shared by every instance: see `PasskeyStore::ceremony_key`). The state is not secret (the
//! browser is given its challenge anyway), only unforgeable.

use base64::Engine as _;
use hmac::{Hmac, Mac as _};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Sha256;

/// The bytes of the server's key.
pub const KEY_BYTES: usize = 32;
/// The longest sealed ceremony opened (bytes): a registration's state names the account's
/// passkeys, at most 20 of them.
pub const MAX_SEALED_BYTES: usize = 32 * 1024;

/// What a ceremony's id carries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sealed {
    /// `register` or `sign_in`.
    #[serde(rename = "k")]
    pub kind: String,
    /// Whose (the account adding a passkey); `None` for a sign-in, nobody's until a key answers.
    #[serde(rename = "u")]
    pub user_id: Option<String>,
    /// Seconds since the epoch.
    #[serde(rename = "e")]
    pub expires_at: f64,
    /// Random: what the table of answered ceremonies keeps.
    #[serde(rename = "n")]
    pub nonce: String,
    /// webauthn-rs's state of the ceremony.
    #[serde(rename = "s")]
    pub state: Value,
}

/// Why a ceremony's id was not accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unsealed {
    /// Not one this server sealed, or another kind.
    Forged,
    /// Sealed here, but too long ago.
    Expired,
}

fn mac(key: &[u8]) -> Hmac<Sha256> {
    // HMAC takes a key of any length.
    Hmac::<Sha256>::new_from_slice(key).unwrap_or_else(|_| unreachable!())
}

fn b64() -> base64::engine::GeneralPurpose {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
}

/// The id of `ceremony`: its JSON and its seal, both base64url, joined by a dot.
pub fn seal(key: &[u8], ceremony: &Sealed) -> String {
    let body = serde_json::to_vec(ceremony).unwrap_or_default();
    let mut m = mac(key);
    m.update(&body);
    let tag = m.finalize().into_bytes();
    format!("{}.{}", b64().encode(&body), b64().encode(tag))
}

/// The ceremony of kind `kind` that `id` carries, if this key sealed it and it has not
/// expired at `now`.
pub fn open(key: &[u8], id: &str, kind: &str, now: f64) -> Result<Sealed, Unsealed> {
    if id.len() > MAX_SEALED_BYTES {
        return Err(Unsealed::Forged);
    }
    let (body, tag) = id.split_once('.').ok_or(Unsealed::Forged)?;
    let body = b64().decode(body).map_err(|_| Unsealed::Forged)?;
    let tag = b64().decode(tag).map_err(|_| Unsealed::Forged)?;
    let mut m = mac(key);
    m.update(&body);
    // Compared in constant time.
    m.verify_slice(&tag).map_err(|_| Unsealed::Forged)?;
    let sealed: Sealed = serde_json::from_slice(&body).map_err(|_| Unsealed::Forged)?;
    if sealed.kind != kind {
        return Err(Unsealed::Forged);
    }
    if sealed.expires_at.is_nan() || sealed.expires_at < now {
        return Err(Unsealed::Expired);
    }
    Ok(sealed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ceremony() -> Sealed {
        Sealed {
            kind: "sign_in".into(),
            user_id: None,
            expires_at: 1_000.0,
            nonce: "n1".into(),
            state: json!({"challenge": "abc"}),
        }
    }

    #[test]
    fn a_sealed_ceremony_opens_with_its_key_and_kind_until_it_expires() {
        let key = [7u8; KEY_BYTES];
        let id = seal(&key, &ceremony());
        assert_eq!(open(&key, &id, "sign_in", 999.0), Ok(ceremony()));
        assert_eq!(open(&key, &id, "sign_in", 1_001.0), Err(Unsealed::Expired));
        assert_eq!(open(&key, &id, "register", 999.0), Err(Unsealed::Forged));
        assert_eq!(
            open(&[8u8; KEY_BYTES], &id, "sign_in", 999.0),
            Err(Unsealed::Forged)
        );
    }

    #[test]
    fn a_changed_ceremony_does_not_open() {
        let key = [7u8; KEY_BYTES];
        let id = seal(&key, &ceremony());
        let (body, tag) = id.split_once('.').unwrap();
        // Another account, another expiry, under the old seal.
        let mut changed = ceremony();
        changed.user_id = Some("mallory".into());
        changed.expires_at = 9e9;
        let forged_body = b64().encode(serde_json::to_vec(&changed).unwrap());
        for bad in [
            format!("{forged_body}.{tag}"),
            format!("{body}.{}", b64().encode([0u8; 32])),
            body.to_owned(),
            format!("{body}."),
            "..".to_owned(),
            "x".repeat(MAX_SEALED_BYTES + 1),
        ] {
            assert_eq!(
                open(&key, &bad, "sign_in", 999.0),
                Err(Unsealed::Forged),
                "{bad:.40}"
            );
        }
    }
}
