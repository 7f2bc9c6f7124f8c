//! Opening a MAC connection: eltdx 3.3.0 (`mac/transport.py`, as easy_tdx)
//! sends three 7709 setup frames first and ignores their replies. They are
//! byte for byte the engine's [`Handshake`] step 1, step 2 and
//! [`LegacySetup`] with pytdx's body, with fixed msg_ids; a server answers
//! them as a 7709 server does.

use crate::proto::commands::{Handshake, LegacySetup, Request};

/// The msg_ids eltdx's three setup frames carry.
pub const MAC_SETUP_MSG_IDS: [u32; 3] = [0x0093_1802, 0x0094_1802, 0x0099_1803];

/// The three setup requests of a MAC connection, in order; send them with
/// [`MAC_SETUP_MSG_IDS`] to match eltdx's bytes.
pub fn mac_setup() -> [Request; 3] {
    [Handshake { step: 1 }.into(), Handshake { step: 2 }.into(), LegacySetup::default().into()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap()).collect()
    }

    #[test]
    fn the_setup_frames_are_eltdx_bytes() {
        let want = [
            hex("0c0218930001030003000d0001"),
            hex("0c0218940001030003000d0002"),
            hex("0c031899000120002000db0fd5d0c9ccd6a4a8af0000008fc22540130000d500c9ccbdf0d7ea00000002"),
        ];
        for ((request, msg_id), want) in mac_setup().iter().zip(MAC_SETUP_MSG_IDS).zip(want) {
            let mut frame = Vec::new();
            request.encode_frame(msg_id, &mut frame).unwrap();
            assert_eq!(frame, want, "{}", request.name());
        }
    }
}
