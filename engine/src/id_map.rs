//! A hash map for the engine's own ids and small keys: the Supervisor's
//! request table and known series ends, and the locked core's waiters.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Sequential ids and small keys (a series: a code, a period) hash well with
/// one multiply per word (FxHash's step); SipHash would dominate a cycle.
/// Keys come from the engine's own ids and its callers' requests, never
/// from the network, so there is no flooding to resist.
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }
    fn write_u8(&mut self, n: u8) {
        self.write_u64(u64::from(n));
    }
    fn write_u16(&mut self, n: u16) {
        self.write_u64(u64::from(n));
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A map keyed by sequential ids or small keys, hashed with one multiply a word.
pub(crate) type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;
