//! The editor side: arbitrary bytes on stdin through the input guard of `tether serve`
//! (crates/tether/src/server/transport.rs) and through the forwarder's splitter, both framed
//! by the one framing module (crates/tether/src/framing.rs), delivered in chunks of a size
//! the input picks (split and merged frames alike).
//!
//! Properties: no panic; the guard passes on only whole frames whose bodies
//! tower-lsp-server's codec decodes (one it rejects would end the server's input); every
//! frame it answers itself is a JSON-RPC error; it ends at end of input. The splitter's
//! pieces put back together are the input, byte for byte (the forwarder passes bytes on
//! unchanged), and within its limits it finds exactly the frames the guard's reader finds.
#![no_main]

use std::pin::Pin;
use std::task::{Context, Poll};

use libfuzzer_sys::fuzz_target;
use tether::framing::{read_all_bodies, split_all_bodies, split_exact, within_splitter_limits};
use tether::server::transport::{guard_bytes, tower_lsp_decodes};
use tokio::io::{AsyncRead, ReadBuf};

/// Gives `data` at most `chunk` bytes per read.
struct Chunked<'a> {
    data: &'a [u8],
    chunk: usize,
}

impl AsyncRead for Chunked<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let n = self.chunk.min(self.data.len()).min(buf.remaining());
        buf.put_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Poll::Ready(Ok(()))
    }
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, data)) = data.split_first() else {
        return;
    };
    let chunk = match first {
        0 => usize::MAX,
        n => usize::from(n),
    };
    let (passed, answered) = runtime().block_on(guard_bytes(Chunked { data, chunk }));
    let bodies = split_exact(&passed).expect("the guard passes whole frames");
    for body in bodies {
        if let Err(e) = tower_lsp_decodes(body) {
            panic!(
                "passed a body tower-lsp-server rejects ({e}): {:?}",
                String::from_utf8_lossy(body)
            );
        }
    }
    for frame in answered {
        let bodies = split_exact(&frame).expect("answers are whole frames");
        assert_eq!(bodies.len(), 1);
        let v: serde_json::Value = serde_json::from_slice(bodies[0]).expect("answers are JSON");
        assert!(v["error"]["code"].is_i64(), "{v}");
    }
    let (split, whole) = split_all_bodies(data, chunk);
    assert!(whole, "the splitter's pieces are the input, byte for byte");
    if within_splitter_limits(data) {
        let read = runtime().block_on(read_all_bodies(data, chunk));
        assert_eq!(split, read, "the splitter and the guard's reader find the same frames");
    }
});
