//! The `tether` binary's library: the stdio JSON-RPC server (the only crate that knows LSP
//! and the editor-facing JSON protocol), the command line, and the demo.
