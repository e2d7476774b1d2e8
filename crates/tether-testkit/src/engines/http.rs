//! A tiny blocking HTTP/1.1 client for the engines' loopback control calls (Syncthing's REST
//! API, moto's bucket and `/moto-api` calls): one request per connection
//! (`Connection: close`), the request body sent with `Content-Length`, the response read to
//! the end of the stream and its body taken by `Transfer-Encoding: chunked`, by
//! `Content-Length`, or as everything up to the close (RFC 9112 §6.3, in that order). No
//! TLS, no redirects, no keep-alive: every peer is a server on 127.0.0.1 that this kit
//! started.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// A response: status code, headers in the order received (names as sent), whole body.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as text (lossy UTF-8), for messages.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Whether the status is 2xx.
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// Sends one request to `addr` and reads its whole response. `path` is the request target
/// (path and query, already percent-encoded); `headers` are added after `Host`,
/// `Connection: close` and `Content-Length` (sent for every method but GET and HEAD with an
/// empty body). `timeout` bounds the connect and the whole exchange.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    timeout: Duration,
) -> io::Result<Response> {
    let deadline = Instant::now() + timeout;
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_nodelay(true)?;
    stream.set_write_timeout(Some(timeout))?;

    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if !body.is_empty() || !matches!(method, "GET" | "HEAD") {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()?;

    // Read to the close, each read bounded by what is left of the deadline.
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("{method} {path}: no complete response within {timeout:?}"),
            ));
        }
        stream.set_read_timeout(Some(left))?;
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            // A server that closes with a reset right after a complete response.
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset && complete(&raw, method) => {
                break;
            }
            Err(e) => return Err(e),
        }
    }
    parse(&raw, method)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{method} {path}: {e}")))
}

/// Whether `raw` already holds a whole response (used only to forgive a reset after it).
fn complete(raw: &[u8], method: &str) -> bool {
    parse(raw, method).is_ok()
}

fn parse(raw: &[u8], method: &str) -> Result<Response, String> {
    let end = find(raw, b"\r\n\r\n").ok_or("the response ended inside its header")?;
    let head = std::str::from_utf8(&raw[..end]).map_err(|_| "a header is not UTF-8")?;
    let rest = &raw[end + 4..];
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    // "HTTP/1.1 200 OK"
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    if !version.starts_with("HTTP/1.") {
        return Err(format!("not an HTTP/1.x status line: {status_line:?}"));
    }
    let status: u16 = parts
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no status code in {status_line:?}"))?;
    let mut headers = Vec::new();
    for line in lines {
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| format!("a header line without a colon: {line:?}"))?;
        headers.push((name.trim().to_string(), value.trim().to_string()));
    }
    let mut response = Response {
        status,
        headers,
        body: Vec::new(),
    };
    // No body: HEAD, 1xx, 204, 304 (RFC 9112 §6.3, rule 1).
    if method == "HEAD" || status / 100 == 1 || status == 204 || status == 304 {
        return Ok(response);
    }
    let chunked = response
        .header("transfer-encoding")
        .is_some_and(|te| te.to_ascii_lowercase().contains("chunked"));
    response.body = if chunked {
        dechunk(rest)?
    } else if let Some(len) = response.header("content-length") {
        let len: usize = len
            .parse()
            .map_err(|_| format!("a bad Content-Length: {len:?}"))?;
        if rest.len() < len {
            return Err(format!(
                "the body ended after {} of its {len} bytes",
                rest.len()
            ));
        }
        rest[..len].to_vec()
    } else {
        rest.to_vec()
    };
    Ok(response)
}

/// Decodes a chunked body (RFC 9112 §7.1); chunk extensions and trailers are dropped.
fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        let eol = find(rest, b"\r\n").ok_or("a chunk size line without its end")?;
        let line = std::str::from_utf8(&rest[..eol]).map_err(|_| "a chunk size is not UTF-8")?;
        let size_text = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| format!("a bad chunk size: {line:?}"))?;
        rest = &rest[eol + 2..];
        if size == 0 {
            return Ok(body);
        }
        if rest.len() < size + 2 {
            return Err(format!("a chunk of {size} bytes was cut short"));
        }
        body.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_content_length_chunked_and_close_delimited_bodies() {
        let r = parse(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhello",
            "GET",
        )
        .unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, &b"hello"[..]));
        assert_eq!(r.header("x-a"), Some("b"));

        let r = parse(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\nWiki\r\n5\r\npedia\r\n0\r\nTrailer: x\r\n\r\n",
            "GET",
        )
        .unwrap();
        assert_eq!(r.body, b"Wikipedia");

        let r = parse(
            b"HTTP/1.0 404 NOT FOUND\r\nServer: x\r\n\r\nall of it",
            "GET",
        )
        .unwrap();
        assert_eq!((r.status, r.text().as_str()), (404, "all of it"));

        let r = parse(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", "HEAD").unwrap();
        assert!(r.body.is_empty());
    }

    #[test]
    fn rejects_cut_responses() {
        assert!(parse(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort", "GET").is_err());
        assert!(parse(b"HTTP/1.1 200 OK\r\nContent-", "GET").is_err());
        assert!(
            parse(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\nabc",
                "GET"
            )
            .is_err()
        );
    }
}
