//! A deliberately tiny Kafka client for the harness's own checks: one request at a time over one
//! TCP connection, with kafka-protocol's messages. It exists so the broker harness can be tested
//! independently of kroupier's own connection layer.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The largest response frame the harness accepts.
const MAX_FRAME: usize = 16 * 1024 * 1024;

/// One connection to one broker.
pub struct Connection {
    stream: TcpStream,
    next_correlation_id: i32,
}

impl Connection {
    /// Connects to the first broker of `bootstrap` (`host:port[,host:port...]`) that answers.
    pub async fn connect(bootstrap: &str) -> std::io::Result<Self> {
        let mut last = std::io::Error::other(format!("no address in {bootstrap:?}"));
        for addr in bootstrap
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
        {
            match TcpStream::connect(addr).await {
                Ok(stream) => {
                    stream.set_nodelay(true)?;
                    return Ok(Self {
                        stream,
                        next_correlation_id: 1,
                    });
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Sends `request` at `version` and waits for its response.
    pub async fn send<R>(&mut self, request: &R, version: i16) -> Result<R::Response, String>
    where
        R: Request + Encodable + HeaderVersion,
        R::Response: Decodable + HeaderVersion,
    {
        let correlation_id = self.next_correlation_id;
        self.next_correlation_id += 1;
        let header = RequestHeader::default()
            .with_request_api_key(R::KEY)
            .with_request_api_version(version)
            .with_correlation_id(correlation_id)
            .with_client_id(Some(StrBytes::from_static_str("kroupier-it")));
        let header_version = R::header_version(version);
        let mut body = BytesMut::new();
        header
            .encode(&mut body, header_version)
            .map_err(|e| format!("encode header: {e}"))?;
        request
            .encode(&mut body, version)
            .map_err(|e| format!("encode request: {e}"))?;
        let mut frame = BytesMut::with_capacity(body.len() + 4);
        frame.put_i32(body.len() as i32);
        frame.extend_from_slice(&body);
        self.stream
            .write_all(&frame)
            .await
            .map_err(|e| format!("write: {e}"))?;

        let len = self
            .stream
            .read_i32()
            .await
            .map_err(|e| format!("read length: {e}"))?;
        let len = usize::try_from(len).map_err(|_| format!("negative frame length {len}"))?;
        if len > MAX_FRAME {
            return Err(format!("frame of {len} bytes exceeds {MAX_FRAME}"));
        }
        let mut buf = vec![0u8; len];
        self.stream
            .read_exact(&mut buf)
            .await
            .map_err(|e| format!("read body: {e}"))?;
        let mut buf = Bytes::from(buf);
        let response_header =
            ResponseHeader::decode(&mut buf, R::Response::header_version(version))
                .map_err(|e| format!("decode response header: {e}"))?;
        if response_header.correlation_id != correlation_id {
            return Err(format!(
                "correlation id {} does not match {correlation_id}",
                response_header.correlation_id
            ));
        }
        let response =
            R::Response::decode(&mut buf, version).map_err(|e| format!("decode response: {e}"))?;
        if buf.has_remaining() {
            return Err(format!("{} bytes left after the response", buf.remaining()));
        }
        Ok(response)
    }
}
