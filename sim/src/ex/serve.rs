//! The 7727 listener: EX requests decoded with the engine's codec and
//! answered from an [`ExWorld`], each reply echoing the request's id.

use std::io;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tracing::debug;

use tdx_engine::proto::ex::ExRequest;
use tdx_engine::proto::frame::encode_response;
use tdx_engine::proto::{Compression, RequestDecoder};

use super::ExWorld;
use crate::server::Listener;

/// Serves EX connections from `listener` until accepting fails.
pub async fn serve<L: Listener>(listener: L, world: Arc<ExWorld>) -> io::Result<()> {
    loop {
        let (stream, peer) = listener.accept().await?;
        let world = Arc::clone(&world);
        tokio::spawn(async move {
            if let Err(e) = connection(stream, &world).await {
                debug!(%peer, error = %e, "ex connection ended");
            }
        });
    }
}

/// Answers one connection's requests in order; a frame that is not an EX
/// request closes it, as a real server drops a client it cannot read.
pub async fn connection<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, world: &ExWorld) -> io::Result<()> {
    let invalid = |e: tdx_engine::proto::ProtoError| io::Error::new(io::ErrorKind::InvalidData, e);
    let mut decoder = RequestDecoder::new();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        while let Some(frame) = decoder.next_frame().map_err(invalid)? {
            let request = ExRequest::decode(&frame).map_err(invalid)?;
            let payload = world.respond(&request).map_err(invalid)?.unwrap_or_default();
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
