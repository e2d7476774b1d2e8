//! `session/search` (R-INDEX-8): every conversation Tether can see, found at once, from the
//! session index (`tether-index`, the same file `tether sessions search` uses:
//! `<data>/index/sessions.sqlite3` in the cache's folder).
//!
//! The index is opened on the first search and kept open. Each search first catches it up
//! with Tether's cache (this hub's store) and the agents' own stores (each located from the
//! environment of the configured agent that names it, else the requesting editor's, as
//! `session/list` with `all` does), off the async threads. From the first search on, a
//! file watcher (`tether_index::Keeper`) notes what changes, so later searches read only
//! that instead of `stat`ing every session; where the platform's watcher cannot be used
//! (R-INDEX-2) every search looks at every session. One catch-up runs at a time: a
//! search that arrives while one runs waits for it and answers from it rather than
//! starting another. With the cache switched off there is no data folder: the answer is
//! empty.

use std::sync::Mutex;

use serde_json::json;
use tether_history::AgentKind;
use tether_index::{Filter, Hit, Index, IndexError, Keeper, Order, Sources};
use tether_store::Store;

use crate::protocol::{
    SEARCH_DEFAULT_LIMIT, SEARCH_MAX_LIMIT, SearchHit, SearchOrder, SearchParams, SearchResult,
};

use super::error::Result;
use super::events::Event;
use super::{Hub, absolute_root, invalid_params, lock, request_failed, workspace_of};

/// The hub's session index: closed until the first search, then kept open.
#[derive(Default)]
pub(super) struct SearchIndex {
    /// The open index and the last catch-up that finished with it. Held across a catch-up
    /// and a query (both run on a blocking thread), so one runs at a time.
    slot: tokio::sync::Mutex<Slot>,
    /// Catch-ups started and finished (tickets 1, 2, 3…), read without waiting for `slot`.
    tickets: Mutex<Tickets>,
}

#[derive(Default)]
struct Slot {
    index: Option<Index>,
    /// The watcher on the index's sources, from the first catch-up on.
    keeper: Option<Keeper>,
    /// Why there is no watcher, once one could not be started (not tried again).
    no_keeper: Option<String>,
    /// The ticket of the last catch-up that finished.
    done: u64,
    /// How many of the open index's warnings were published.
    warned: usize,
}

#[derive(Default)]
struct Tickets {
    started: u64,
    done: u64,
}

impl SearchIndex {
    /// The catch-up a search arriving now needs finished before it answers: the one
    /// running, else a new one.
    fn needed(&self) -> u64 {
        let t = lock(&self.tickets);
        if t.started > t.done {
            t.started
        } else {
            t.done + 1
        }
    }

    /// With the slot held, whose last finished catch-up is `done`: the ticket of the
    /// catch-up to run now, `None` when the one `need`ed has finished.
    fn start_if_needed(&self, done: u64, need: u64) -> Option<u64> {
        (done < need).then(|| {
            let mut t = lock(&self.tickets);
            t.started += 1;
            t.started
        })
    }

    /// Catch-up `ticket` finished; returns it, for the slot.
    fn finished(&self, ticket: u64) -> u64 {
        let mut t = lock(&self.tickets);
        t.done = t.done.max(ticket);
        ticket
    }
}

/// Where a search looks, made on the blocking thread (locating the stores reads folders).
type Prepare = Box<dyn FnOnce() -> (Sources, Filter) + Send>;

/// What a search needs answered on the blocking thread.
struct Ask {
    query: String,
    order: Order,
    limit: usize,
}

impl Hub {
    /// `session/search` (R-INDEX-8): the sessions of Tether's cache and of the agents' own
    /// stores whose title or text holds every word of `query` (as plain text), filtered by
    /// `workspace` and `agent`, best match (or newest) first, at most `limit` (default
    /// [`SEARCH_DEFAULT_LIMIT`]), each with a snippet around its best match; and how many
    /// sessions the filters kept. The index is caught up first (R-INDEX-2). With no cache
    /// configured the result is empty.
    ///
    /// # Errors
    /// `-32602` for a `limit` outside 1..=[`SEARCH_MAX_LIMIT`] or a relative
    /// `workspace.root`; `-32803` (`data.kind` `index`, `data.path` the index file) when the
    /// index cannot be opened, made private or written.
    pub async fn search(&self, params: SearchParams) -> Result<SearchResult> {
        let limit = params.limit.unwrap_or(SEARCH_DEFAULT_LIMIT);
        if !(1..=SEARCH_MAX_LIMIT).contains(&limit) {
            return Err(invalid_params(
                "limit",
                &format!("must be 1 to {SEARCH_MAX_LIMIT}, got {limit}"),
            ));
        }
        let root = params
            .workspace
            .as_ref()
            .map(|w| absolute_root(&w.root))
            .transpose()?;
        let Some(store) = self.store.clone() else {
            return Ok(SearchResult {
                sessions: Vec::new(),
                indexed: 0,
            });
        };
        let root = root
            .map(|r| workspace_of(&r).map(|w| w.root().to_owned()))
            .transpose()?;
        let env = super::history::base_env();
        let plans = self.agent_store_plans();
        let names: Vec<(AgentKind, String)> =
            plans.iter().map(|(k, n, _)| (*k, n.clone())).collect();
        let agent = params.agent;
        let cache = store.clone();
        let prepare: Prepare = Box::new(move || {
            let mut filter = match &root {
                Some(root) => tether_index::workspace_filter(root, &env),
                None => Filter::default(),
            };
            filter.agent = agent;
            let sources = Sources {
                agents: plans
                    .iter()
                    .filter_map(|(kind, _, env)| tether_history::locate(*kind, env))
                    .collect(),
                cache: Some(cache),
            };
            (sources, filter)
        });
        let ask = Ask {
            query: params.query,
            order: match params.order.unwrap_or_default() {
                SearchOrder::Rank => Order::Rank,
                SearchOrder::Newest => Order::Newest,
            },
            limit: limit as usize,
        };
        let (hits, indexed) = self.search_index(&store, prepare, ask).await?;
        let sessions = hits
            .into_iter()
            .map(|hit| {
                let e = hit.entry;
                let agent = names
                    .iter()
                    .find(|(k, _)| k.name() == e.source)
                    .map(|(_, name)| name.clone())
                    .or(e.agent)
                    .unwrap_or_default();
                SearchHit {
                    session_id: e.session_id,
                    agent,
                    source: e.source,
                    title: e.title,
                    workspace: e.cwd,
                    updated_utc: e.updated_utc.unwrap_or_default(),
                    snippet: hit.snippet,
                    path: e.path,
                }
            })
            .collect();
        Ok(SearchResult { sessions, indexed })
    }

    /// The index of `store`'s folder, caught up with the sources `prepare` makes unless a
    /// catch-up that was running when this call came finished meanwhile, asked `ask` with
    /// the filter `prepare` makes. Publishes the index's new warnings (a damaged file
    /// rebuilt).
    async fn search_index(
        &self,
        store: &Store,
        prepare: Prepare,
        ask: Ask,
    ) -> Result<(Vec<Hit>, u64)> {
        let path = tether_index::default_path(store.root());
        let shared = &self.search;
        // A catch-up running now will do; otherwise one that starts after this call.
        let need = shared.needed();
        let mut slot = shared.slot.lock().await;
        let ticket = shared.start_if_needed(slot.done, need);
        let index = slot.index.take();
        let kept = Kept {
            keeper: slot.keeper.take(),
            refused: slot.no_keeper.is_some(),
        };
        let warned = if index.is_some() { slot.warned } else { 0 };
        let file = path.clone();
        let ran = tokio::task::spawn_blocking(move || {
            let (sources, filter) = prepare();
            answer(
                index,
                kept,
                &file,
                ticket.is_some(),
                &sources,
                &filter,
                &ask,
                warned,
            )
        })
        .await
        .map_err(|e| request_failed(e.to_string(), json!({"kind": "internal"})))?;
        let Ran {
            index,
            keeper,
            no_keeper,
            fresh,
            answer,
        } = ran;
        slot.warned = warned + fresh.len();
        slot.index = index;
        slot.keeper = keeper;
        if let Some(why) = no_keeper {
            tracing::info!(%why, "session index: no file watcher");
            slot.no_keeper = Some(why);
        }
        if let Some(ticket) = ticket
            && slot.index.is_some()
        {
            slot.done = shared.finished(ticket);
        }
        drop(slot);
        for warning in fresh {
            tracing::warn!(%warning, "session index");
            self.emit(
                None,
                Event::Warning {
                    message: format!("Tether's session index: {warning}"),
                },
            )
            .await;
        }
        answer.map_err(|err| {
            request_failed(
                err.to_string(),
                json!({"kind": "index", "path": path.display().to_string()}),
            )
        })
    }
}

/// The watcher a search's blocking part is given.
struct Kept {
    keeper: Option<Keeper>,
    /// One could not be started before: none is tried.
    refused: bool,
}

/// What the blocking part of a search gives back.
struct Ran {
    /// The index, still usable (`None` when it could not be opened or caught up).
    index: Option<Index>,
    /// The watcher, to keep for the next search.
    keeper: Option<Keeper>,
    /// Why no watcher could be started, when one was tried now and could not.
    no_keeper: Option<String>,
    /// Its warnings not yet published.
    fresh: Vec<String>,
    answer: std::result::Result<(Vec<Hit>, u64), IndexError>,
}

/// Opens the index at `path` unless `index` is open, catches it up with `sources` when
/// `catch_up` (through the watcher in `kept`, started now when there is none and none was
/// refused; rebuilding the index once when it is damaged), and answers `ask` with
/// `filter`. Blocking.
#[allow(clippy::too_many_arguments)]
fn answer(
    index: Option<Index>,
    kept: Kept,
    path: &std::path::Path,
    catch_up: bool,
    sources: &Sources,
    filter: &Filter,
    ask: &Ask,
    warned: usize,
) -> Ran {
    let failed = |answer| Ran {
        index: None,
        keeper: None,
        no_keeper: None,
        fresh: Vec::new(),
        answer: Err(answer),
    };
    let mut index = match index {
        Some(index) => index,
        None => match Index::open(path) {
            Ok(index) => index,
            Err(err) => return failed(err),
        },
    };
    // Another editor's environment locates other stores: another watcher.
    let mut keeper = kept.keeper.filter(|k| k.watches(sources));
    let mut no_keeper = None;
    if catch_up {
        // Started before the catch-up it serves, so nothing written meanwhile is missed.
        if keeper.is_none() && !kept.refused {
            match Keeper::start(sources, path) {
                Ok(k) => keeper = Some(k),
                Err(why) => no_keeper = Some(why),
            }
        }
        let started = std::time::Instant::now();
        let caught = match keeper.as_mut() {
            Some(k) => k.catch_up(&mut index, sources).map(|kept| {
                tracing::debug!(plan = ?kept.plan, "session index: the watcher's plan");
                kept.report
            }),
            None => index.catch_up(sources, &mut |_| {}),
        };
        let caught = match caught {
            Err(err) if err.is_corruption() => {
                // Rebuilt whole: a new watcher starts with the next search.
                keeper = None;
                index
                    .rebuild(&err.to_string())
                    .and_then(|()| index.catch_up(sources, &mut |_| {}))
            }
            other => other,
        };
        match caught {
            Ok(report) => tracing::debug!(
                ?report,
                ms = started.elapsed().as_millis() as u64,
                "session index caught up"
            ),
            Err(err) => return failed(err),
        }
    }
    let fresh = index.warnings().get(warned..).unwrap_or_default().to_vec();
    let answer = index
        .search(&ask.query, filter, ask.order, ask.limit)
        .and_then(|hits| Ok((hits, index.count(filter)?)));
    Ran {
        index: Some(index),
        keeper,
        no_keeper,
        fresh,
        answer,
    }
}

impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchIndex").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One catch-up at a time, never repeated for a search that waited for one: the rule,
    /// step by step (each `start_if_needed` is taken with the slot held, as the hub does).
    #[test]
    fn a_search_during_a_catch_up_waits_for_it_and_starts_none() {
        let s = SearchIndex::default();
        // A arrives with nothing running: it needs a new catch-up, and runs it (ticket 1).
        let a = s.needed();
        assert_eq!(a, 1);
        assert_eq!(s.start_if_needed(0, a), Some(1));
        // B arrives while it runs: A's will do.
        let b = s.needed();
        assert_eq!(b, 1);
        let done = s.finished(1);
        // B takes the slot after A: nothing to run.
        assert_eq!(s.start_if_needed(done, b), None);
        // C arrives after A's finished: a new one (ticket 2)…
        let c = s.needed();
        assert_eq!(c, 2);
        assert_eq!(s.start_if_needed(done, c), Some(2));
        // …which never finishes (C was cancelled). D, arriving meanwhile, waits for it,
        // finds it unfinished when it takes the slot, and runs its own (ticket 3).
        let d = s.needed();
        assert_eq!(d, 2);
        assert_eq!(s.start_if_needed(done, d), Some(3));
        let done = s.finished(3);
        assert_eq!(done, 3);
        // E, after D's: a new one again.
        assert_eq!(s.needed(), 4);
    }
}
