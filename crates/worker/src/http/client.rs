//! The one HTTP client of kroupier, for a status API: fast failover's hints (`POST /rebalance`)
//! and links (`GET /watch`) between workers, and the console's polls and task writes
//! (`GET /status`, `GET /tasks`, `PUT`/`DELETE /tasks/{id}`, `POST /tasks/{id}/...`).
//!
//! It is hyper's HTTP/1.1 client connection (`hyper::client::conn::http1`, the hyper axum
//! already serves with) over a TCP connection opened by [`connect`], or by the caller: fast
//! failover's link opens its own (`kroupier_coordinator::failover::link`), because whether that
//! connect is refused, times out or reaches the peer is an input of the proof of death, and then
//! speaks HTTP over it with [`exchange`], the same code path as every other request here.
//!
//! Why not hyper-util's pooled `Client`: its connector and pool stand between the caller and the
//! connect, and the callers here must tell a refused connection (nothing listens there: the
//! process is gone) from every other failure, with the link's timeouts and no retry. Every
//! request here is one connection (a hint, a poll a second, a link that lasts), so a pool would
//! buy nothing. Plain HTTP: the address is the one a worker advertises in its member metadata.

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::http::request::Builder;
use hyper::{Method, Request, StatusCode, header};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

/// The largest answer body [`send`] reads (a `/status` of 5,000 tasks is about 1 MB).
pub const MAX_ANSWER: usize = 16 << 20;

/// Why a request got no HTTP answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The connection was refused: nothing listens there (the process is gone).
    Refused,
    /// Anything else, said in words.
    Other(String),
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Refused => f.write_str("connection refused"),
            Failure::Other(why) => f.write_str(why),
        }
    }
}

/// An HTTP answer read whole: its status code and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The status code.
    pub code: u16,
    /// The body, as text (invalid UTF-8 replaced).
    pub body: String,
}

/// A request for `method path` (path and query) on the status API at `addr` (`host:port`),
/// with the `Host` and `User-Agent` every request here carries; add headers, then give it to
/// [`send`] or [`exchange`].
pub fn request(addr: &str, method: Method, path: &str) -> Builder {
    Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, addr)
        .header(header::USER_AGENT, "kroupier")
}

/// Opens a TCP connection to `addr` (`host:port`); a refusal is [`Failure::Refused`].
pub async fn connect(addr: &str) -> Result<TcpStream, Failure> {
    let stream = TcpStream::connect(addr).await.map_err(|e| {
        if e.kind() == std::io::ErrorKind::ConnectionRefused {
            Failure::Refused
        } else {
            Failure::Other(format!("cannot connect: {e}"))
        }
    })?;
    // Requests are small and answers awaited: no Nagle delay.
    stream
        .set_nodelay(true)
        .map_err(|e| Failure::Other(format!("cannot connect: {e}")))?;
    Ok(stream)
}

/// Sends `request` (a [`request`] with its body, or `Bytes::new()` for none) to `addr` and
/// reads the answer whole (up to [`MAX_ANSWER`]), all within `timeout`.
pub async fn send(
    addr: &str,
    request: Result<Request<Bytes>, hyper::http::Error>,
    timeout: Duration,
) -> Result<Answer, Failure> {
    let request = request.map_err(|e| Failure::Other(format!("not a valid request: {e}")))?;
    let whole = async {
        let stream = connect(addr).await?;
        let reply = exchange(stream, request).await?;
        reply.answer().await
    };
    match tokio::time::timeout(timeout, whole).await {
        Ok(answer) => answer,
        Err(_) => Err(Failure::Other(format!(
            "no answer within {} ms",
            timeout.as_millis()
        ))),
    }
}

/// `GET path` on the status API at `addr`, read whole within `timeout`.
pub async fn get(addr: &str, path: &str, timeout: Duration) -> Result<Answer, Failure> {
    let request = request(addr, Method::GET, path).body(Bytes::new());
    send(addr, request, timeout).await
}

/// Sends `request` over `stream` (opened by [`connect`] or by the caller) and returns the
/// answer's head with its body still to read; the connection lasts as long as the [`Reply`].
pub async fn exchange(stream: TcpStream, request: Request<Bytes>) -> Result<Reply, Failure> {
    let (mut sender, connection) = hyper::client::conn::http1::Builder::new()
        // The names as written in the specs (`Authorization`, `Content-Length`).
        .title_case_headers(true)
        .handshake::<_, Full<Bytes>>(TokioIo::new(stream))
        .await
        .map_err(failure)?;
    let connection = Connection(tokio::spawn(async move {
        // Ends with the body, or when the reply is dropped (aborted then).
        let _ = connection.await;
    }));
    let response = sender
        .send_request(request.map(Full::new))
        .await
        .map_err(failure)?;
    let (head, body) = response.into_parts();
    Ok(Reply {
        status: head.status,
        body,
        _sender: sender,
        _connection: connection,
    })
}

/// An answer's status and its body as it arrives; dropping it closes the connection.
pub struct Reply {
    /// The answer's status.
    pub status: StatusCode,
    body: Incoming,
    // Kept for as long as the body is read.
    _sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    _connection: Connection,
}

impl fmt::Debug for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reply")
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

impl Reply {
    /// The body's next piece as it arrives; `None` at its end, an error when the connection
    /// fails or closes in the middle of it.
    pub async fn chunk(&mut self) -> Option<Result<Bytes, Failure>> {
        loop {
            match self.body.frame().await? {
                Ok(frame) => {
                    if let Ok(data) = frame.into_data() {
                        return Some(Ok(data));
                    }
                    // Trailers: nothing to read.
                }
                Err(error) => return Some(Err(failure(error))),
            }
        }
    }

    /// The whole answer, its body up to [`MAX_ANSWER`].
    pub async fn answer(self) -> Result<Answer, Failure> {
        let code = self.status.as_u16();
        let body = Limited::new(self.body, MAX_ANSWER)
            .collect()
            .await
            .map_err(|e| Failure::Other(format!("cannot read the answer: {e}")))?
            .to_bytes();
        Ok(Answer {
            code,
            body: String::from_utf8_lossy(&body).into_owned(),
        })
    }
}

/// The task that drives one connection; aborted when dropped.
struct Connection(JoinHandle<()>);

impl Drop for Connection {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A hyper error, said for the caller: an answer that is not HTTP (a TLS-only status API, any
/// other protocol) says so.
fn failure(error: hyper::Error) -> Failure {
    if error.is_parse() || error.is_parse_status() {
        Failure::Other(format!("not an HTTP answer (plain HTTP expected): {error}"))
    } else {
        Failure::Other(error.to_string())
    }
}

/// Percent-encodes one path segment (a task id in `/tasks/{id}`).
pub fn segment(text: &str) -> String {
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
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    /// Serves one connection with `raw` as the answer, whatever the request; the request's
    /// bytes as read.
    async fn answering(raw: &'static [u8]) -> (String, JoinHandle<Vec<u8>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let served = tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            let mut head = vec![0u8; 1024];
            let read = stream.read(&mut head).await.unwrap();
            head.truncate(read);
            stream.write_all(raw).await.unwrap();
            head
        });
        (addr, served)
    }

    #[tokio::test(flavor = "current_thread")]
    async fn reads_code_and_body() {
        let (addr, served) =
            answering(b"HTTP/1.0 202 Accepted\r\ncontent-length: 3\r\n\r\nok\n").await;
        let answer = get(&addr, "/status", Duration::from_secs(2)).await.unwrap();
        assert_eq!((answer.code, answer.body.as_str()), (202, "ok\n"));
        let head = String::from_utf8(served.await.unwrap()).unwrap();
        assert!(head.starts_with("GET /status HTTP/1.1\r\n"), "{head}");
        assert!(head.contains(&format!("Host: {addr}\r\n")), "{head}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn an_answer_that_is_not_http_is_a_failure() {
        for raw in [&b"\x16\x03\x01 tls bytes"[..], b"SSH-2.0 x\r\n\r\n"] {
            let raw: &'static [u8] = raw;
            let (addr, _served) = answering(raw).await;
            let got = get(&addr, "/status", Duration::from_secs(2)).await;
            assert!(matches!(got, Err(Failure::Other(_))), "{got:?}");
        }
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
        let got = get(&addr, "/status", Duration::from_secs(2)).await;
        assert_eq!(got, Err(Failure::Refused));
    }
}
