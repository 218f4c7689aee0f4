//! A small HTTP/1.0 client for the workers' status APIs (`GET /status`, and the task writes
//! `PUT`/`DELETE /tasks/{id}`, `POST /tasks/{id}/pause|resume|restart`): plain HTTP on the address a worker advertises in its member metadata.
//! HTTP/1.0 keeps the answer unchunked and the connection closed after it.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The largest answer read (a `/status` of 5,000 tasks is about 1 MB).
const MAX_ANSWER: u64 = 16 << 20;

/// Why a request got no HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The connection was refused: nothing listens there (the process is gone).
    Refused,
    /// Anything else, said in words.
    Other(String),
}

/// An HTTP answer: status code and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Answer {
    /// The status code.
    pub code: u16,
    /// The body, as text.
    pub body: String,
}

/// Sends `method path` to `addr` (`host:port`) with an optional `Authorization` header value,
/// within `timeout`.
pub(crate) async fn request(
    addr: &str,
    method: &str,
    path: &str,
    authorization: Option<&str>,
    timeout: Duration,
) -> Result<Answer, Failure> {
    send(addr, method, path, authorization, None, timeout).await
}

/// As [`request`], with an optional JSON body.
pub(crate) async fn send(
    addr: &str,
    method: &str,
    path: &str,
    authorization: Option<&str>,
    json: Option<&[u8]>,
    timeout: Duration,
) -> Result<Answer, Failure> {
    match tokio::time::timeout(timeout, exchange(addr, method, path, authorization, json)).await {
        Ok(answer) => answer,
        Err(_) => Err(Failure::Other(format!(
            "no answer within {} ms",
            timeout.as_millis()
        ))),
    }
}

async fn exchange(
    addr: &str,
    method: &str,
    path: &str,
    authorization: Option<&str>,
    json: Option<&[u8]>,
) -> Result<Answer, Failure> {
    let mut stream = TcpStream::connect(addr).await.map_err(|e| {
        if e.kind() == std::io::ErrorKind::ConnectionRefused {
            Failure::Refused
        } else {
            Failure::Other(format!("cannot connect: {e}"))
        }
    })?;
    let auth = authorization
        .map(|value| format!("Authorization: {value}\r\n"))
        .unwrap_or_default();
    let body = json.unwrap_or_default();
    let content_type = if json.is_some() {
        "Content-Type: application/json\r\n"
    } else {
        ""
    };
    let head = format!(
        "{method} {path} HTTP/1.0\r\nHost: {addr}\r\n{auth}{content_type}Content-Length: {}\r\n\r\n",
        body.len()
    );
    let io = |e: std::io::Error| Failure::Other(e.to_string());
    stream.write_all(head.as_bytes()).await.map_err(io)?;
    stream.write_all(body).await.map_err(io)?;
    let mut raw = Vec::new();
    stream
        .take(MAX_ANSWER)
        .read_to_end(&mut raw)
        .await
        .map_err(io)?;
    parse(&raw)
}

/// Splits a raw HTTP/1.x answer into its code and body.
pub(crate) fn parse(raw: &[u8]) -> Result<Answer, Failure> {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| Failure::Other("not an HTTP answer (plain HTTP expected)".to_owned()))?;
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .filter(|_| head.starts_with("HTTP/1."))
        .ok_or_else(|| Failure::Other("not an HTTP answer (plain HTTP expected)".to_owned()))?;
    Ok(Answer {
        code,
        body: body.to_owned(),
    })
}

/// Percent-encodes one path segment.
pub(crate) fn segment(text: &str) -> String {
    let mut out = String::new();
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_code_and_body() {
        let answer = parse(b"HTTP/1.0 202 Accepted\r\ncontent-length: 3\r\n\r\nok\n").unwrap();
        assert_eq!((answer.code, answer.body.as_str()), (202, "ok\n"));
        assert!(parse(b"\x16\x03\x01 tls bytes").is_err());
        assert!(parse(b"SSH-2.0 x\r\n\r\n").is_err());
    }

    #[test]
    fn encodes_path_segments() {
        assert_eq!(segment("task-1"), "task-1");
        assert_eq!(segment("a/b c"), "a%2Fb%20c");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_closed_port_is_refused() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        drop(listener);
        let got = request(&addr, "GET", "/status", None, Duration::from_secs(2)).await;
        assert_eq!(got, Err(Failure::Refused));
    }
}
