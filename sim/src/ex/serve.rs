//! The 7727 listener: EX and MAC-EX requests on the same connection,
//! decoded with the engine's codec ([`ExPortRequest`]: prefix 0x01, told
//! apart by command code) and answered from an [`ExWorld`], each reply
//! echoing the request's id (0 for MAC-EX, whose frames carry 0). An
//! [`ExMode`] models the free servers of 2026 (eltdx 3.3.0
//! `docs/EXTENDED_MARKET.md`), which leave commands unanswered: the client
//! sees its connection open and no reply, and times out.

use std::io;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tracing::debug;

use tdx_engine::proto::commands::Reply;
use tdx_engine::proto::ex::{ExPortRequest, MacExRequest};
use tdx_engine::proto::frame::encode_response;
use tdx_engine::proto::{Compression, ProtoError, RequestDecoder};

use super::{mac_ex, ExWorld};
use crate::server::Listener;

pub use super::mode::ExMode;

impl ExMode {
    /// The reply payload `mode` sends to `request`; `None` leaves it unanswered.
    pub fn answer(self, world: &ExWorld, request: &ExPortRequest) -> Result<Option<Vec<u8>>, ProtoError> {
        if !self.answers(request) {
            return Ok(None);
        }
        match request {
            // An instrument the world does not list gets an empty payload.
            ExPortRequest::Ex(r) => Ok(Some(world.respond(r)?.unwrap_or_default())),
            ExPortRequest::MacEx(r) => {
                let reply = match (self, r) {
                    (Self::MacOnly, MacExRequest::MacGoods(_)) => Reply::MacGoods(Vec::new()),
                    _ => mac_ex::respond(world, r),
                };
                let mut out = Vec::new();
                r.encode_reply(&reply, &mut out)?;
                Ok(Some(out))
            }
        }
    }
}

/// Serves EX and MAC-EX connections from `listener` until accepting fails.
pub async fn serve<L: Listener>(listener: L, world: Arc<ExWorld>) -> io::Result<()> {
    serve_mode(listener, world, ExMode::Normal).await
}

/// [`serve`] with the commands `mode` answers.
pub async fn serve_mode<L: Listener>(listener: L, world: Arc<ExWorld>, mode: ExMode) -> io::Result<()> {
    loop {
        let (stream, peer) = listener.accept().await?;
        let world = Arc::clone(&world);
        tokio::spawn(async move {
            if let Err(e) = connection_mode(stream, &world, mode).await {
                debug!(%peer, error = %e, "ex connection ended");
            }
        });
    }
}

/// Answers one connection's requests in order; a frame that is neither
/// EX nor MAC-EX closes it, as a real server drops a client it cannot read.
pub async fn connection<S: AsyncRead + AsyncWrite + Unpin>(stream: S, world: &ExWorld) -> io::Result<()> {
    connection_mode(stream, world, ExMode::Normal).await
}

/// [`connection`] with the commands `mode` answers.
pub async fn connection_mode<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    world: &ExWorld,
    mode: ExMode,
) -> io::Result<()> {
    let invalid = |e: ProtoError| io::Error::new(io::ErrorKind::InvalidData, e);
    let mut decoder = RequestDecoder::new();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        while let Some(frame) = decoder.next_frame().map_err(invalid)? {
            let request = ExPortRequest::decode(&frame).map_err(invalid)?;
            let Some(payload) = mode.answer(world, &request).map_err(invalid)? else { continue };
            let mut out = Vec::new();
            encode_response(&mut out, frame.header.msg_id, frame.header.msg_type, &payload, Compression::IfSmaller(6))
                .map_err(invalid)?;
            stream.write_all(&out).await?;
        }
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        decoder.feed(&buf[..n]).map_err(invalid)?;
    }
}
