//! A page of older turns past the resume window (`session/history`): [`TurnPage`],
//! [`ChatPage`], [`ExecPage`].

use serde::Serialize;

/// One page of a session's chat turns (`T` = [`crate::model::ChatTurn`]) or exec turns
/// (`T` = [`crate::model::ExecTurn`]), for scrolling back past the resume window
/// (`session/history`, docs/protocol.md "Older turns").
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnPage<T> {
    /// Absolute index (0-based, in the whole list) of the page's first turn.
    pub base: u64,
    /// The turns from `base` on, oldest first: `min(limit, before - base)` of them, fewer
    /// only where a stored turn could not be read (a torn or corrupt record).
    pub turns: Vec<T>,
    /// Turns in the session's whole list when the page was read.
    pub total: u64,
    /// True when the page came from the open session's memory (O(limit)); false when the
    /// journal was streamed (O(journal), memory O(limit)).
    pub from_memory: bool,
}

/// A page of chat turns ([`crate::Store::chat_page`]).
pub type ChatPage = TurnPage<crate::model::ChatTurn>;

/// A page of exec turns ([`crate::Store::exec_page`]).
pub type ExecPage = TurnPage<crate::model::ExecTurn>;
