//! The trait every command implements, in both directions; its own file so
//! that the 7709 commands (`commands`) and the MAC ones (`mac`) both build
//! on it while `commands` lists them all.

use super::frame::REQUEST_PREFIX;
use super::ProtoError;

/// One command (7709 or MAC): its request body and its reply payload.
pub trait Command: Sized {
    /// The command code.
    const MSG_TYPE: u16;
    /// The request frame's first byte: 7709's 0x0c unless the command says
    /// otherwise (MAC: 0x1c, or 0x1218's head flags 0x01/0x02).
    const PREFIX: u8 = REQUEST_PREFIX;
    /// A short name for errors and traces.
    const NAME: &'static str;
    /// Safe to send again on a new connection if the first one failed
    /// before the reply: true for every command here, since all only read.
    const RETRY_SAFE: bool = true;
    /// The parsed reply.
    type Reply;

    /// The msg_id the request frame carries for the engine's `msg_id`: the
    /// id itself on 7709, 0 on MAC (whose servers answer with id 0, in
    /// order); a command that routes by its id says how.
    fn wire_msg_id(msg_id: u32) -> u32 {
        if Self::PREFIX == REQUEST_PREFIX {
            msg_id
        } else {
            0
        }
    }

    /// Appends the request body (after the 12-byte header).
    fn encode_body(&self, out: &mut Vec<u8>) -> Result<(), ProtoError>;
    /// Parses a request body (server side).
    fn decode_body(body: &[u8]) -> Result<Self, ProtoError>;
    /// Parses this request's reply payload (client side).
    fn parse_reply(&self, payload: &[u8]) -> Result<Self::Reply, ProtoError>;
    /// Appends the reply payload for this request (server side).
    fn encode_reply(&self, reply: &Self::Reply, out: &mut Vec<u8>) -> Result<(), ProtoError>;
}
