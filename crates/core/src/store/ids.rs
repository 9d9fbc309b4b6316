//! Thread ids: short enough to type a prefix of, random enough never to collide in practice.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

/// How many hex characters an id has (48 bits).
pub(super) const ID_LEN: usize = 12;

/// The shortest prefix [`super::ThreadStore::load`] accepts.
pub(super) const MIN_PREFIX: usize = 4;

/// A new id: the first [`ID_LEN`] hex digits of the SHA-256 of the time in nanoseconds, the
/// process id and a per-process counter, so that two processes (or two calls in the same
/// nanosecond) get different ids.
pub(super) fn new_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos());
    let mut hasher = Sha256::new();
    hasher.update(nanos.to_le_bytes());
    hasher.update(std::process::id().to_le_bytes());
    hasher.update(COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    crate::base::describe::hex(&hasher.finalize()[..ID_LEN / 2])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_short_lowercase_hex_and_distinct() {
        let ids: std::collections::HashSet<String> = (0..1000).map(|_| new_id()).collect();
        assert_eq!(ids.len(), 1000);
        for id in &ids {
            assert_eq!(id.len(), ID_LEN);
            assert!(
                id.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')),
                "{id}"
            );
        }
    }
}
