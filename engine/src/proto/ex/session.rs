//! 0x2454: the 7727 login. pytdx 1.72 (`ExSetupCmd1`) sends it once after
//! connecting and ignores the reply; eltdx 3.3.0's MAC-EX client
//! (`MacExLoginCmd`, from opentdx) sends a different 80-byte body and takes
//! a reply of at least two bytes as success. Both bodies are opaque.

use crate::proto::command::Command;
use crate::proto::ProtoError;

use super::EX_REQUEST_PREFIX;

/// Length of every known login body.
pub const EX_LOGIN_BODY_BYTES: usize = 80;

/// pytdx 1.72's login body (`parser/ex_setup_commands.py`).
pub const PYTDX_LOGIN_BODY: [u8; EX_LOGIN_BODY_BYTES] = *b"\
\x1f\x32\xc6\xe5\xd5\x3d\xfb\x41\x1f\x32\xc6\xe5\xd5\x3d\xfb\x41\
\x1f\x32\xc6\xe5\xd5\x3d\xfb\x41\x1f\x32\xc6\xe5\xd5\x3d\xfb\x41\
\x1f\x32\xc6\xe5\xd5\x3d\xfb\x41\x1f\x32\xc6\xe5\xd5\x3d\xfb\x41\
\x1f\x32\xc6\xe5\xd5\x3d\xfb\x41\x1f\x32\xc6\xe5\xd5\x3d\xfb\x41\
\xcc\xe1\x6d\xff\xd5\xba\x3f\xb8\xcb\xc5\x7a\x05\x4f\x77\x48\xea";

/// eltdx 3.3.0's login body (`ex/commands/login.py`, credited to opentdx).
pub const ELTDX_LOGIN_BODY: [u8; EX_LOGIN_BODY_BYTES] = *b"\
\xe5\xbb\x1c\x2f\xaf\xe5\x25\x94\x1f\x32\xc6\xe5\xd5\x3d\xfb\x41\
\x5b\x73\x4c\xc9\xcd\xbf\x0a\xc9\x20\x21\xbf\xdd\x1e\xb0\x6d\x22\
\xd0\x08\x88\x4c\x16\x11\xcb\x13\x78\xf6\xab\xd8\x24\xd8\x99\xd2\
\x1f\x32\xc6\xe5\xd5\x3d\xfb\x41\x1f\x32\xc6\xe5\xd5\x3d\xfb\x41\
\xa9\x32\x5a\xc9\x35\xdc\x08\x37\x33\x5a\x16\xe4\xce\x17\xc1\xbb";

/// The msg_id pytdx's login frame carries (its bytes 1..5).
pub const PYTDX_LOGIN_MSG_ID: u32 = 0x0065_4801;
/// The msg_id eltdx's login frame carries.
pub const ELTDX_LOGIN_MSG_ID: u32 = 0;

/// 0x2454 request: an opaque 80-byte body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExLogin {
    /// The body, as a client sends it.
    pub body: [u8; EX_LOGIN_BODY_BYTES],
}

impl ExLogin {
    /// pytdx's login (the EX protocol's setup).
    pub const PYTDX: Self = Self { body: PYTDX_LOGIN_BODY };
    /// eltdx's login (its MAC-EX client's).
    pub const ELTDX: Self = Self { body: ELTDX_LOGIN_BODY };
}

/// The login the engine's `ex` pool opens every 7727 connection with, for
/// EX and MAC-EX alike: eltdx's. eltdx 3.3.0 (`docs/EXTENDED_MARKET.md`,
/// measured 2026-10) reports that pytdx's setup (easy_tdx's
/// `EX_SETUP_CMD`, [`ExLogin::PYTDX`]) gets one 299-byte reply and then
/// silence, while its `MacExClient` logs in with this body and has EX's
/// count and pages and every MAC-EX command answered on that connection.
pub const EX_POOL_LOGIN: ExLogin = ExLogin::ELTDX;

/// A login reply: its payload kept as sent, since no source reads it past
/// its length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExLoginReply {
    /// The reply payload, at least two bytes.
    pub payload: Vec<u8>,
}

/// Fewest payload bytes eltdx accepts as a login answer.
pub const EX_LOGIN_REPLY_BYTES_MIN: usize = 2;

impl Command for ExLogin {
    const MSG_TYPE: u16 = 0x2454;
    const PREFIX: u8 = EX_REQUEST_PREFIX;
    const NAME: &'static str = "ex_login";
    type Reply = ExLoginReply;

    // EX frames echo the client's msg_id, as 7709 does.
    fn wire_msg_id(msg_id: u32) -> u32 {
        msg_id
    }

    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        out.extend_from_slice(&self.body);
        Ok(())
    }

    fn decode_body(body: &[u8]) -> Result<Self, ProtoError> {
        let body =
            body.try_into().map_err(|_| ProtoError::BadRequestLength { msg_type: Self::MSG_TYPE, len: body.len() })?;
        Ok(Self { body })
    }

    fn parse_reply(&self, payload: &[u8]) -> Result<ExLoginReply, ProtoError> {
        if payload.len() < EX_LOGIN_REPLY_BYTES_MIN {
            return Err(ProtoError::Truncated {
                what: "ex login reply",
                needed: EX_LOGIN_REPLY_BYTES_MIN,
                remaining: payload.len(),
            });
        }
        Ok(ExLoginReply { payload: payload.to_vec() })
    }

    fn encode_reply(&self, reply: &ExLoginReply, out: &mut Vec<u8>) -> Result<(), ProtoError> {
        if reply.payload.len() < EX_LOGIN_REPLY_BYTES_MIN {
            return Err(ProtoError::ValueOutOfRange {
                what: "ex login reply length",
                value: reply.payload.len() as i64,
            });
        }
        out.extend_from_slice(&reply.payload);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{frame_of, hex};
    use super::super::{encode_ex_frame, ExRequest};
    use super::*;

    #[test]
    fn both_logins_are_the_sources_bytes() {
        let pytdx = [
            "01 01 48 65 00 01 52 00 52 00 54 24 1f 32 c6 e5",
            "d5 3d fb 41 1f 32 c6 e5 d5 3d fb 41 1f 32 c6 e5",
            "d5 3d fb 41 1f 32 c6 e5 d5 3d fb 41 1f 32 c6 e5",
            "d5 3d fb 41 1f 32 c6 e5 d5 3d fb 41 1f 32 c6 e5",
            "d5 3d fb 41 1f 32 c6 e5 d5 3d fb 41 cc e1 6d ff",
            "d5 ba 3f b8 cb c5 7a 05 4f 77 48 ea",
        ]
        .map(hex)
        .concat();
        let eltdx = [
            hex("01 00 00 00 00 01 52 00 52 00 54 24"),
            hex("e5bb1c2fafe525941f32c6e5d53dfb415b734cc9cdbf0ac92021bfdd1eb06d22d008884c1611cb1378f6abd824d899d2"),
            hex("1f32c6e5d53dfb411f32c6e5d53dfb41a9325ac935dc0837335a16e4ce17c1bb"),
        ]
        .concat();
        for (login, msg_id, want) in
            [(ExLogin::PYTDX, PYTDX_LOGIN_MSG_ID, pytdx), (ExLogin::ELTDX, ELTDX_LOGIN_MSG_ID, eltdx)]
        {
            let mut frame = Vec::new();
            encode_ex_frame(&login, msg_id, &mut frame).unwrap();
            assert_eq!(frame, want);
            assert_eq!(ExRequest::decode(&frame_of(&want)), Ok(ExRequest::Login(login)));
        }
    }

    #[test]
    fn replies_need_two_bytes() {
        let login = ExLogin::ELTDX;
        assert!(matches!(login.parse_reply(&[1]), Err(ProtoError::Truncated { .. })));
        assert_eq!(login.parse_reply(&[1, 0]), Ok(ExLoginReply { payload: vec![1, 0] }));
        assert!(ExLogin::decode_body(&[0; 79]).is_err());
    }
}
