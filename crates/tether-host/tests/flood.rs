//! An agent flooding output at a slow subscriber: everything is delivered, memory stays
//! bounded. Its own test binary, so the process's RSS is this test's alone.

mod common;

use std::time::Duration;

use common::{Env, fault};
use tether_host::scripted::FaultAction;
use tether_host::{AcpConnection, AcpOptions, SessionEvent};

const UPDATES: u64 = 100_000;
const CAPACITY: usize = 64;

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_is_delivered_completely_with_bounded_memory() {
    let env = Env::new();
    let script = env.script(vec![fault(
        "session/prompt",
        &[1],
        FaultAction::Flood { count: UPDATES },
    )]);
    let options = AcpOptions {
        event_capacity: CAPACITY,
        ..AcpOptions::default()
    };
    let conn = AcpConnection::start(&env.config(&script), options)
        .await
        .expect("start");
    let mut s = conn.new_session(&env.ws()).await.expect("new");
    let before = rss_kib();
    let done = std::sync::atomic::AtomicBool::new(false);
    let prompt = async {
        let r = conn.prompt(&s.id, "go").await;
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        r
    };
    let (turn, (count, peak_queue, stalled_rss, done_while_stalled)) =
        tokio::join!(prompt, async {
            // A subscriber that does not read for 2 s: an unbounded design would buffer the
            // agent's whole output (~15 MB of JSON, far more as parsed values) meanwhile.
            tokio::time::sleep(Duration::from_secs(2)).await;
            let stalled_rss = rss_kib();
            let done_while_stalled = done.load(std::sync::atomic::Ordering::SeqCst);
            let mut peak_queue = 0;
            let mut count = 0u64;
            loop {
                peak_queue = peak_queue.max(s.events.len());
                match tokio::time::timeout(Duration::from_secs(60), s.events.recv()).await {
                    Ok(Some(SessionEvent::Update { update })) => {
                        if update["sessionUpdate"] == "agent_message_chunk" {
                            count += 1;
                        }
                        if update["content"]["text"]
                            .as_str()
                            .is_some_and(|t| t.ends_with(" go"))
                        {
                            break;
                        }
                    }
                    Ok(Some(other)) => panic!("unexpected {other:?}"),
                    Ok(None) | Err(_) => break,
                }
            }
            (count, peak_queue, stalled_rss, done_while_stalled)
        });
    let turn = turn.expect("the turn completes");
    // Every flood chunk plus the two reply chunks, none dropped.
    assert_eq!(count, UPDATES + 2);
    // The text kept for the classifier is the turn's head, bounded (ARCHITECTURE.md, "Hostile
    // input").
    assert_eq!(
        turn.agent_text.len() as u64,
        (UPDATES + "echo: go".len() as u64).min(tether_host::acp::MAX_TURN_TEXT as u64)
    );
    assert!(
        peak_queue <= CAPACITY,
        "queue bounded by the channel: {peak_queue}"
    );
    let grown = stalled_rss.saturating_sub(before);
    eprintln!(
        "flood: {count} updates, peak queue {peak_queue}, RSS growth while stalled {grown} KiB"
    );
    assert!(
        grown < 16 * 1024,
        "RSS grew {grown} KiB while the subscriber stalled"
    );
    // Backpressure reached the agent: while the subscriber stalled, the turn could not end.
    assert!(
        !done_while_stalled,
        "the agent finished streaming into an unread channel"
    );
    conn.shutdown().await;
}
