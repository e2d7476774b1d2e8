//! `tether-fake-model`: runs the fake model API server on loopback for tests not written in
//! Rust and for the demo.
//!
//! Prints `listening http://127.0.0.1:PORT` on stdout once ready, then serves until killed
//! (SIGINT or SIGTERM), or until stdin closes when `--until-stdin-closes` is given. Faults,
//! the reply and the request log are driven through the `/__fake/…` control endpoints (see
//! the `tether_testkit::fake_model` docs).

use std::io::Write;
use std::process::ExitCode;

use tether_testkit::{FakeModel, Reply, ReplyMode};
use tokio::io::AsyncReadExt;

const USAGE: &str = "usage: tether-fake-model [--port N] [--reply TEXT | --echo PREFIX] [--chunk-delay-ms N] [--until-stdin-closes]

  --port N              port on 127.0.0.1 (default 0: an ephemeral port)
  --reply TEXT          always answer TEXT
  --echo PREFIX         answer PREFIX followed by the last user words (default: --echo 'ok: ')
  --chunk-delay-ms N    pause N ms between stream frames (default 0)
  --until-stdin-closes  also stop when stdin reaches end of file";

struct Options {
    port: u16,
    reply: Reply,
    until_stdin_closes: bool,
}

fn parse(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
    let mut options = Options {
        port: 0,
        reply: Reply::default(),
        until_stdin_closes: false,
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--port" => {
                let v = value("--port")?;
                options.port = v
                    .parse()
                    .map_err(|_| format!("--port: not a port number: {v:?}"))?;
            }
            "--reply" => options.reply.mode = ReplyMode::Fixed(value("--reply")?),
            "--echo" => options.reply.mode = ReplyMode::Echo(value("--echo")?),
            "--chunk-delay-ms" => {
                let v = value("--chunk-delay-ms")?;
                options.reply.chunk_delay_ms = v
                    .parse()
                    .map_err(|_| format!("--chunk-delay-ms: not a number: {v:?}"))?;
            }
            "--until-stdin-closes" => options.until_stdin_closes = true,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(options)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let options = match parse(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(msg) if msg.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(msg) => {
            eprintln!("tether-fake-model: {msg}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let fake = match FakeModel::start_on(options.port).await {
        Ok(f) => f,
        Err(e) => {
            eprintln!(
                "tether-fake-model: cannot listen on 127.0.0.1:{}: {e}",
                options.port
            );
            return ExitCode::FAILURE;
        }
    };
    fake.set_reply(options.reply);
    let mut stdout = std::io::stdout();
    if writeln!(stdout, "listening {}", fake.base_url())
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return ExitCode::FAILURE;
    }
    let Ok(ended) = tether_testkit::procs::end_requested() else {
        eprintln!("tether-fake-model: cannot install signal handlers");
        return ExitCode::FAILURE;
    };
    let stdin_closed = async {
        if !options.until_stdin_closes {
            return std::future::pending::<()>().await;
        }
        let mut stdin = tokio::io::stdin();
        let mut buf = [0u8; 1024];
        while matches!(stdin.read(&mut buf).await, Ok(n) if n > 0) {}
    };
    tokio::select! {
        () = ended => {}
        () = stdin_closed => {}
    }
    drop(fake);
    ExitCode::SUCCESS
}
