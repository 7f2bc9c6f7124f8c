//! A minimal client over any stream, built on the engine's codec: enough to
//! test the reference server without the engine.

#![allow(dead_code)]

use std::time::Duration;

use tdx_engine::proto::{Frame, FrameDecoder, ProtoError, Reply, Request};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

pub struct Client<S> {
    pub stream: S,
    pub decoder: FrameDecoder,
    next_id: u32,
    pub pushes: Vec<Frame>,
}

#[derive(Debug)]
pub enum ClientError {
    Io(std::io::Error),
    Proto(ProtoError),
    Closed,
    TimedOut,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Client<S> {
    pub fn new(stream: S) -> Self {
        Self { stream, decoder: FrameDecoder::new(), next_id: 1, pushes: Vec::new() }
    }

    pub async fn send(&mut self, request: &Request) -> u32 {
        let msg_id = self.next_id;
        self.next_id += 1;
        let mut wire = Vec::new();
        request.encode_frame(msg_id, &mut wire).unwrap();
        self.stream.write_all(&wire).await.unwrap();
        msg_id
    }

    /// The next frame, within `timeout`.
    pub async fn frame(&mut self, timeout: Duration) -> Result<Frame, ClientError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(frame) = self.decoder.next_frame().map_err(ClientError::Proto)? {
                return Ok(frame);
            }
            let mut buf = [0u8; 8192];
            let n = tokio::time::timeout_at(deadline, self.stream.read(&mut buf))
                .await
                .map_err(|_| ClientError::TimedOut)?
                .map_err(ClientError::Io)?;
            if n == 0 {
                self.decoder.finish().map_err(ClientError::Proto)?;
                return Err(ClientError::Closed);
            }
            self.decoder.feed(&buf[..n]).map_err(ClientError::Proto)?;
        }
    }

    /// Sends `request` and returns its parsed reply; other frames are kept as pushes.
    pub async fn call(&mut self, request: &Request) -> Result<Reply, ClientError> {
        let msg_id = self.send(request).await;
        loop {
            let frame = self.frame(Duration::from_secs(10)).await?;
            // MAC replies carry msg_id 0; 0x0ffc's its routed id.
            if frame.header.msg_id == request.wire_msg_id(msg_id) && frame.header.msg_type == request.msg_type() {
                return request.parse_reply(&frame.payload).map_err(ClientError::Proto);
            }
            self.pushes.push(frame);
        }
    }
}
