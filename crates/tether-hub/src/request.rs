//! Who a request comes from and what it brings: the [`RequestCtx`] that a front end (an
//! editor connection, the ACP front) gives the hub with each call, and that the agents the
//! call starts are started with.
//!
//! The context travels with the call (a task-local the front end scopes around it, one value
//! for all of it) and is carried explicitly into the work a call leaves running in a task of
//! its own: the prompt turn's task, the recovery dialog asked in the background, the handoff
//! offered during a wait. Work that no request started (nothing does yet) runs with the
//! empty context, and an agent started so in a shared hub says so in the log.

use agent_client_protocol::v1::schema::McpServer;
use tether_host::process::BaseEnv;

/// What the agents a request starts get from the requester.
#[derive(Debug, Clone, Default)]
pub struct RequestCtx {
    /// The requesting editor's environment (R-DAEMON-7): in the daemon, the one its
    /// forwarder sent in the handshake; `None`: this process's own (an in-process server,
    /// whose environment is its editor's).
    pub env: Option<BaseEnv>,
    /// The MCP servers an ACP client gave for the session the request is about (ACP
    /// `mcpServers` of `session/new` and `session/load`, R-ACP-2), handed to agents with
    /// `session/new`, `session/load` or `session/resume`. Editors give none.
    pub mcp_servers: Vec<McpServer>,
    /// Whether the ACP client offers terminals (ACP `clientCapabilities.terminal`,
    /// R-ACP-2): agents are told so at `initialize`, and their `terminal/*` requests go to
    /// the client. Editors offer none.
    pub terminal: bool,
}

tokio::task_local! {
    static REQUEST: RequestCtx;
}

impl RequestCtx {
    /// The context of the request whose call runs now; the empty one outside any.
    #[must_use]
    pub fn current() -> Self {
        REQUEST.try_with(Clone::clone).unwrap_or_default()
    }

    /// Whether a front end gave this context (any field set).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.env.is_none() && self.mcp_servers.is_empty() && !self.terminal
    }

    /// This context with `servers` as its MCP servers (an ACP `session/new`'s own).
    #[must_use]
    pub fn with_mcp_servers(mut self, servers: Vec<McpServer>) -> Self {
        self.mcp_servers = servers;
        self
    }

    /// Runs `call` as a call of this request: agents it starts get this context.
    pub async fn scope<F: std::future::Future>(self, call: F) -> F::Output {
        REQUEST.scope(self, call).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_call_sees_its_requests_context_and_a_task_gets_it_only_when_given() {
        assert!(RequestCtx::current().is_empty(), "outside any request");
        let ctx = RequestCtx {
            env: Some(BaseEnv(std::sync::Arc::new(
                [("HOME".to_owned(), "/home/editor".to_owned())].into(),
            ))),
            mcp_servers: Vec::new(),
            terminal: true,
        };
        let (seen, spawned_bare, spawned_carried) = ctx
            .scope(async {
                let seen = RequestCtx::current();
                // A task does not inherit a task-local: it is carried or lost.
                let bare = tokio::spawn(async { RequestCtx::current() }).await.unwrap();
                let carried =
                    tokio::spawn(RequestCtx::current().scope(async { RequestCtx::current() }))
                        .await
                        .unwrap();
                (seen, bare, carried)
            })
            .await;
        assert!(seen.terminal && seen.env.is_some());
        assert!(spawned_bare.is_empty());
        assert!(spawned_carried.terminal && spawned_carried.env.is_some());
    }
}
