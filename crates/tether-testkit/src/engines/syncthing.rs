//! Two Syncthing instances on loopback sharing one folder ([`SyncthingPair`]): the two
//! "machines" of a Syncthing-replicated session folder.
//!
//! The binary is `$TETHER_SYNCTHING`, else `syncthing` on PATH: Debian bookworm's 1.19.2,
//! installed by tests/sync/install.sh. Each instance ([`Side::A`], [`Side::B`]) has its own
//! home (config, keys, database; `syncthing generate --home H --no-default-folder`) in a
//! temporary folder, and its log (stdout and stderr) in `H/syncthing.log`. Its config is
//! rewritten before the first start (Syncthing's config docs, "GUI Element" and "Options
//! Element"): the GUI/REST API on `127.0.0.1:<free port>` with a known API key
//! ([`SyncthingPair::api_key`]), the sync protocol on `tcp://127.0.0.1:<free port>`; global
//! and local discovery off, relays off, NAT traversal and STUN off, usage reporting declined,
//! crash reporting off, upgrade checks off (`autoUpgradeIntervalH` 0, `--no-upgrade`), no
//! browser, no low-priority process group, no minimum free disk. It runs as
//! `STMONITORED=yes syncthing serve --home H --no-browser --no-restart --no-upgrade`: one
//! process. (1.19 otherwise starts a monitor that runs Syncthing as its child, with
//! `--no-restart` too; `STMONITORED` is the hidden setting the monitor gives that child.)
//!
//! Then, through the REST config API of 1.19 (Syncthing's REST docs, "Config Endpoints",
//! since 1.12): each instance's device ID from `GET /rest/system/status` (`myID`); each is
//! given the other with `POST /rest/config/devices`, B first, then A. Only A dials: its
//! address for B is `tcp://127.0.0.1:PORT`, B's for A is `dynamic`, which with discovery off
//! resolves to nothing. Two instances that dial each other at the same moment can each close
//! the other's connection as a duplicate ("Connected to already connected device", Syncthing's
//! lib/connections/service.go) and be left with none until their next connection loop, 5 s
//! or more later: seen here in about one start in five, before A alone dialed. Then the
//! folder [`FOLDER_ID`] with `POST /rest/config/folders`: its path (one per side), shared
//! with both devices, send-receive, rescan every [`RESCAN_INTERVAL_S`] s, the file system
//! watcher on with a delay of [`WATCHER_DELAY_S`] s, no minimum free disk. Syncthing keeps a
//! `.stfolder` marker folder in each shared folder and writes an incoming file as
//! `.syncthing.<name>.tmp` before renaming it into place.
//!
//! # Use
//! - [`SyncthingPair::start`]`(path_a, path_b)`, then [`SyncthingPair::wait_connected`];
//! - [`SyncthingPair::wait_file`]`(side, rel_path, accept, timeout)`: the file's bytes once
//!   `accept` takes them;
//! - [`SyncthingPair::scan`] (blocks until the scan is done), [`SyncthingPair::wait_in_sync`]
//!   (both scanned, then both 100 % complete with nothing needed, each as seen by the other
//!   too);
//! - faults: [`SyncthingPair::pause_folder`] / [`SyncthingPair::resume_folder`] (one side
//!   stops scanning, sending and pulling the folder), [`SyncthingPair::pause_peer`] /
//!   [`SyncthingPair::resume_peer`] (the two disconnect: "the other machine is offline");
//! - [`SyncthingPair::rest`] for any other REST call, [`SyncthingPair::folder_status`] and
//!   [`SyncthingPair::completion`] for the raw JSON.
//!
//! Waits poll REST endpoints (`/rest/system/connections`, `/rest/db/status`,
//! `/rest/db/completion`, Syncthing's REST docs) every 200 ms or the file every 50 ms; a
//! timeout is an [`EngineError::Timeout`] saying what was awaited, the last status seen and
//! the tail of both instances' logs. A REST call that fails or answers non-2xx is an
//! [`EngineError::Failed`] with the answer's body; no binary, an [`EngineError::Missing`].

use std::cell::Cell;
use std::fmt;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use super::http;
use super::{EngineError, POLL, Proc, Result, failed, free_ports, log_tail, poll_until};

/// The shared folder's ID.
pub const FOLDER_ID: &str = "tether-sessions";
/// The folder's full rescan interval, in seconds.
pub const RESCAN_INTERVAL_S: u32 = 1;
/// How long the file system watcher gathers changes before it scans them, in seconds.
pub const WATCHER_DELAY_S: u32 = 1;

/// How long an instance may take to answer its REST API after starting.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long one REST call may take (a scan blocks until it is done).
const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// How often REST-status waits look again (`/rest/db/status` is "expensive", its docs say).
const REST_POLL: Duration = Duration::from_millis(200);

/// One of the two instances ("machines").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    A,
    B,
}

impl Side {
    /// The other side.
    pub fn peer(self) -> Side {
        match self {
            Side::A => Side::B,
            Side::B => Side::A,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Side::A => "a",
            Side::B => "b",
        }
    }
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

struct Instance {
    side: Side,
    home: PathBuf,
    folder: PathBuf,
    gui: SocketAddr,
    listen_port: u16,
    api_key: String,
    device_id: String,
    proc: Proc,
}

/// Two running Syncthing instances sharing [`FOLDER_ID`] (see the module docs). Dropping it
/// kills and reaps both and removes their homes (not the shared folders).
pub struct SyncthingPair {
    a: Instance,
    b: Instance,
    /// Whether A's address for B is in its `tcp4://` form (see [`SyncthingPair::dial_now`]).
    tcp4: Cell<bool>,
    // Last: removed after both processes are gone.
    _homes: tempfile::TempDir,
}

impl SyncthingPair {
    /// Where `syncthing` is: `$TETHER_SYNCTHING`, else the first on PATH.
    /// [`EngineError::Missing`] when there is none.
    pub fn binary() -> Result<PathBuf> {
        if let Some(p) = std::env::var_os("TETHER_SYNCTHING") {
            let p = PathBuf::from(p);
            return if p.is_file() {
                Ok(p)
            } else {
                Err(EngineError::Missing {
                    what: "syncthing".into(),
                    detail: format!("TETHER_SYNCTHING={} does not exist", p.display()),
                })
            };
        }
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .map(|dir| dir.join("syncthing"))
            .find(|p| p.is_file())
            .ok_or_else(|| EngineError::Missing {
                what: "syncthing".into(),
                detail: "no syncthing on PATH (Debian's package: apt-get install syncthing)".into(),
            })
    }

    /// Starts both instances, introduces them to each other and shares [`FOLDER_ID`] at
    /// `path_a` on A and `path_b` on B (created if missing). Returns once both have the
    /// folder configured; [`SyncthingPair::wait_connected`] waits for their connection.
    ///
    /// A start that fails outright (an instance exits, e.g. because another process took one
    /// of its ports between their choice and its bind) is tried again with new ports and
    /// homes, three times in all; the retry is reported on stderr.
    pub fn start(path_a: &Path, path_b: &Path) -> Result<SyncthingPair> {
        let binary = Self::binary()?;
        let mut attempt = 1;
        loop {
            match Self::start_once(&binary, path_a, path_b) {
                Err(EngineError::Failed(msg)) if attempt < 3 => {
                    eprintln!("syncthing: start attempt {attempt} failed, trying again: {msg}");
                    attempt += 1;
                }
                result => return result,
            }
        }
    }

    fn start_once(binary: &Path, path_a: &Path, path_b: &Path) -> Result<SyncthingPair> {
        let homes = tempfile::Builder::new()
            .prefix("tether-syncthing-")
            .tempdir()
            .map_err(|e| failed(format!("syncthing: a temporary folder: {e}")))?;
        let ports = free_ports(4)?;
        let a = Instance::launch(binary, Side::A, homes.path(), path_a, ports[0], ports[1])?;
        let b = Instance::launch(binary, Side::B, homes.path(), path_b, ports[2], ports[3])?;
        let mut pair = SyncthingPair {
            a,
            b,
            tcp4: Cell::new(false),
            _homes: homes,
        };
        for side in [Side::A, Side::B] {
            pair.wait_rest_up(side)?;
        }
        // B learns A first, then A learns B: A's new device schedules an immediate dial,
        // which B accepts. B never dials (see the module docs).
        for side in [Side::B, Side::A] {
            let peer = pair.inst(side.peer());
            let device = json!({
                "deviceID": peer.device_id,
                "name": peer.side.name(),
                "addresses": [pair.peer_address(side)],
                "autoAcceptFolders": false,
            });
            pair.rest(side, "POST", "/rest/config/devices", Some(&device))?;
        }
        for side in [Side::A, Side::B] {
            let inst = pair.inst(side);
            let folder = json!({
                "id": FOLDER_ID,
                "label": FOLDER_ID,
                "path": inst.folder.to_string_lossy(),
                "type": "sendreceive",
                "devices": [{"deviceID": pair.a.device_id}, {"deviceID": pair.b.device_id}],
                "rescanIntervalS": RESCAN_INTERVAL_S,
                "fsWatcherEnabled": true,
                "fsWatcherDelayS": WATCHER_DELAY_S,
                "minDiskFree": {"value": 0, "unit": "%"},
            });
            pair.rest(side, "POST", "/rest/config/folders", Some(&folder))?;
            // The folder as Syncthing took it (a rejected field would show here).
            let got = pair.rest(
                side,
                "GET",
                &format!("/rest/config/folders/{FOLDER_ID}"),
                None,
            )?;
            let ok = got["path"] == folder["path"]
                && got["rescanIntervalS"] == folder["rescanIntervalS"]
                && got["fsWatcherEnabled"] == true
                && got["devices"].as_array().is_some_and(|d| d.len() == 2);
            if !ok {
                return Err(failed(format!(
                    "syncthing {side}: the folder was configured as {got}, not as posted ({folder})"
                )));
            }
        }
        Ok(pair)
    }

    /// The shared folder's path on `side`.
    pub fn folder_path(&self, side: Side) -> &Path {
        &self.inst(side).folder
    }

    /// `side`'s device ID.
    pub fn device_id(&self, side: Side) -> &str {
        &self.inst(side).device_id
    }

    /// `side`'s REST API base, `http://127.0.0.1:PORT`.
    pub fn api_url(&self, side: Side) -> String {
        format!("http://{}", self.inst(side).gui)
    }

    /// `side`'s API key (header `X-API-Key`).
    pub fn api_key(&self, side: Side) -> &str {
        &self.inst(side).api_key
    }

    /// `side`'s home folder (config, keys, database, `syncthing.log`).
    pub fn home(&self, side: Side) -> &Path {
        &self.inst(side).home
    }

    /// `side`'s process id (gone, reaped, once the pair is dropped).
    pub fn pid(&self, side: Side) -> Option<u32> {
        self.inst(side).proc.pid()
    }

    /// The last `lines` lines of `side`'s log.
    pub fn log_tail(&self, side: Side, lines: usize) -> String {
        log_tail(self.inst(side).proc.log(), lines)
    }

    /// One REST call to `side` with its API key; a JSON body is sent as such. The answer's
    /// JSON (`Value::Null` for an empty body); a non-2xx status is an error with its body.
    pub fn rest(
        &self,
        side: Side,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value> {
        let inst = self.inst(side);
        let payload = body.map(Value::to_string).unwrap_or_default();
        let mut headers = vec![("X-API-Key", inst.api_key.as_str())];
        if body.is_some() {
            headers.push(("Content-Type", "application/json"));
        }
        let r = http::request(
            inst.gui,
            method,
            path,
            &headers,
            payload.as_bytes(),
            CALL_TIMEOUT,
        )
        .map_err(|e| failed(format!("syncthing {side}: {method} {path}: {e}")))?;
        if !r.is_success() {
            return Err(failed(format!(
                "syncthing {side}: {method} {path} answered {}: {}",
                r.status,
                r.text().trim()
            )));
        }
        if r.body.iter().all(u8::is_ascii_whitespace) {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&r.body).map_err(|e| {
            failed(format!(
                "syncthing {side}: {method} {path}: not JSON ({e}): {}",
                r.text()
            ))
        })
    }

    /// Waits until each instance reports the other as connected
    /// (`/rest/system/connections`: `connections[peer].connected`).
    pub fn wait_connected(&self, timeout: Duration) -> Result<()> {
        poll_until(
            "the two Syncthing instances to connect",
            timeout,
            REST_POLL,
            |status| {
                let mut all = true;
                status.clear();
                for side in [Side::A, Side::B] {
                    let c = self.rest(side, "GET", "/rest/system/connections", None)?;
                    let peer = &c["connections"][self.device_id(side.peer())];
                    let connected = peer["connected"] == true;
                    all &= connected;
                    status.push_str(&format!("{side}: {peer}; "));
                }
                Ok(all.then_some(()))
            },
            || self.logs(),
        )
    }

    /// Waits until `rel` (relative to the shared folder) on `side` exists and its bytes
    /// satisfy `accept`; returns them. Syncthing renames a fully written temporary file into
    /// place, so no partial file is read.
    pub fn wait_file(
        &self,
        side: Side,
        rel: &str,
        accept: impl Fn(&[u8]) -> bool,
        timeout: Duration,
    ) -> Result<Vec<u8>> {
        let path = self.folder_path(side).join(rel);
        poll_until(
            &format!("{} on {side} to hold the expected bytes", path.display()),
            timeout,
            POLL,
            |status| match std::fs::read(&path) {
                Ok(bytes) if accept(&bytes) => Ok(Some(bytes)),
                Ok(bytes) => {
                    *status = format!("{} bytes, not accepted: {:?}", bytes.len(), preview(&bytes));
                    Ok(None)
                }
                Err(e) => {
                    *status = format!("not readable: {e}");
                    Ok(None)
                }
            },
            || format!("{}\n{}", self.statuses(), self.logs()),
        )
    }

    /// Scans the shared folder on `side` now (`POST /rest/db/scan?folder=…`, which returns
    /// when the scan is done). An error while the folder is paused.
    pub fn scan(&self, side: Side) -> Result<()> {
        self.rest(
            side,
            "POST",
            &format!("/rest/db/scan?folder={FOLDER_ID}"),
            None,
        )
        .map(drop)
    }

    /// The folder's status on `side` (`GET /rest/db/status`: `state`, `global*`, `need*`…).
    pub fn folder_status(&self, side: Side) -> Result<Value> {
        self.rest(
            side,
            "GET",
            &format!("/rest/db/status?folder={FOLDER_ID}"),
            None,
        )
    }

    /// `GET /rest/db/completion` on `side` for the folder, of `device` (`None`: `side`
    /// itself): `completion` (0–100), `needBytes`, `needItems`, `needDeletes`,
    /// `globalBytes`.
    pub fn completion(&self, side: Side, device: Option<Side>) -> Result<Value> {
        let mut path = format!("/rest/db/completion?folder={FOLDER_ID}");
        if let Some(d) = device {
            path.push_str(&format!("&device={}", self.device_id(d)));
        }
        self.rest(side, "GET", &path, None)
    }

    /// Pauses the shared folder on `side` (`PATCH /rest/config/folders/ID {"paused":true}`)
    /// and waits until its folder runner is gone (`/rest/db/status` `state` is `""` in 1.19):
    /// it neither scans nor sends nor pulls; a [`SyncthingPair::scan`] of it is an error.
    pub fn pause_folder(&self, side: Side) -> Result<()> {
        self.set_folder_paused(side, true)
    }

    /// Resumes the folder on `side` and waits until it runs again (a non-empty `state`).
    pub fn resume_folder(&self, side: Side) -> Result<()> {
        self.set_folder_paused(side, false)
    }

    /// Pauses `side`'s peer device on `side` (`PATCH /rest/config/devices/ID
    /// {"paused":true}`): the connection drops and is not made again, both sides see the
    /// other as disconnected, until [`SyncthingPair::resume_peer`].
    pub fn pause_peer(&self, side: Side) -> Result<()> {
        self.set_peer_paused(side, true)?;
        poll_until(
            "the two Syncthing instances to disconnect",
            Duration::from_secs(30),
            REST_POLL,
            |status| {
                let mut none = true;
                status.clear();
                for s in [Side::A, Side::B] {
                    let c = self.rest(s, "GET", "/rest/system/connections", None)?;
                    let peer = &c["connections"][self.device_id(s.peer())];
                    none &= peer["connected"] != true;
                    status.push_str(&format!("{s}: {peer}; "));
                }
                Ok(none.then_some(()))
            },
            || self.logs(),
        )
    }

    /// Resumes `side`'s peer device on `side` and makes A dial B at once;
    /// [`SyncthingPair::wait_connected`] waits for the connection.
    pub fn resume_peer(&self, side: Side) -> Result<()> {
        self.set_peer_paused(side, false)?;
        self.dial_now()
    }

    /// Makes A dial B now instead of at its next connection loop (every 5 to 60 s): A's
    /// address for B is changed between the equivalent `tcp://` and `tcp4://` forms, and a
    /// changed address schedules an immediate dial (lib/connections/service.go,
    /// `checkAndSignalConnectLoopOnUpdatedDevices`; unpausing a device does not).
    pub fn dial_now(&self) -> Result<()> {
        let tcp4 = !self.tcp4.get();
        self.tcp4.set(tcp4);
        let address = [self.peer_address(Side::A)];
        self.rest(
            Side::A,
            "PATCH",
            &format!("/rest/config/devices/{}", self.b.device_id),
            Some(&json!({ "addresses": address })),
        )
        .map(drop)
    }

    /// The address `side` has for its peer: B's listen address on A (in the form
    /// [`SyncthingPair::dial_now`] last chose), `dynamic` on B (with discovery off: none).
    fn peer_address(&self, side: Side) -> String {
        match side {
            Side::A => {
                let scheme = if self.tcp4.get() { "tcp4" } else { "tcp" };
                format!("{scheme}://127.0.0.1:{}", self.b.listen_port)
            }
            Side::B => "dynamic".to_string(),
        }
    }

    /// Scans both sides, then waits until both are in sync: on each side the folder is
    /// `idle`, its own completion is 100 % with nothing needed (`needBytes`, `needItems`,
    /// `needDeletes` 0), the completion it computes for the other side is 100 % with
    /// `needBytes` 0, and both report the same global files, directories and bytes.
    pub fn wait_in_sync(&self, timeout: Duration) -> Result<()> {
        self.scan(Side::A)?;
        self.scan(Side::B)?;
        poll_until(
            "both Syncthing instances to be in sync",
            timeout,
            REST_POLL,
            |status| {
                status.clear();
                let mut ok = true;
                let mut globals = Vec::new();
                for side in [Side::A, Side::B] {
                    let st = self.folder_status(side)?;
                    let own = self.completion(side, None)?;
                    let peer = self.completion(side, Some(side.peer()))?;
                    ok &= st["state"] == "idle"
                        && own["completion"].as_f64() == Some(100.0)
                        && ["needBytes", "needItems", "needDeletes"]
                            .iter()
                            .all(|k| own[*k].as_i64() == Some(0))
                        && peer["completion"].as_f64() == Some(100.0)
                        && peer["needBytes"].as_i64() == Some(0);
                    globals.push((
                        st["globalFiles"].clone(),
                        st["globalDirectories"].clone(),
                        st["globalBytes"].clone(),
                    ));
                    status.push_str(&format!(
                        "{side}: state {} global files/dirs/bytes {}/{}/{} need bytes/items/deletes \
                         {}/{}/{}; own completion {}; completion of {} {} (needBytes {}); ",
                        st["state"],
                        st["globalFiles"],
                        st["globalDirectories"],
                        st["globalBytes"],
                        own["needBytes"],
                        own["needItems"],
                        own["needDeletes"],
                        own["completion"],
                        side.peer(),
                        peer["completion"],
                        peer["needBytes"],
                    ));
                }
                ok &= globals[0] == globals[1];
                Ok(ok.then_some(()))
            },
            || self.logs(),
        )
    }

    fn set_folder_paused(&self, side: Side, paused: bool) -> Result<()> {
        self.rest(
            side,
            "PATCH",
            &format!("/rest/config/folders/{FOLDER_ID}"),
            Some(&json!({ "paused": paused })),
        )?;
        poll_until(
            &format!(
                "the folder on {side} to be {}",
                if paused { "paused" } else { "running" }
            ),
            Duration::from_secs(30),
            REST_POLL,
            |status| {
                // 1.19 reports a paused folder's state as "" (no folder runner), later
                // versions as "paused"; a running one as idle, scanning, syncing…
                let st = self.folder_status(side)?;
                let state = st["state"].as_str().unwrap_or_default();
                *status = format!("state {:?}", state);
                let is_paused = matches!(state, "" | "paused");
                Ok((is_paused == paused).then_some(()))
            },
            || self.logs(),
        )
    }

    fn set_peer_paused(&self, side: Side, paused: bool) -> Result<()> {
        let peer = self.device_id(side.peer()).to_string();
        self.rest(
            side,
            "PATCH",
            &format!("/rest/config/devices/{peer}"),
            Some(&json!({ "paused": paused })),
        )
        .map(drop)
    }

    fn inst(&self, side: Side) -> &Instance {
        match side {
            Side::A => &self.a,
            Side::B => &self.b,
        }
    }

    fn inst_mut(&mut self, side: Side) -> &mut Instance {
        match side {
            Side::A => &mut self.a,
            Side::B => &mut self.b,
        }
    }

    /// Waits until `side` answers `GET /rest/system/status`, and takes its device ID.
    fn wait_rest_up(&mut self, side: Side) -> Result<()> {
        let (gui, key, log) = {
            let i = self.inst(side);
            (i.gui, i.api_key.clone(), i.proc.log().to_path_buf())
        };
        let proc = &mut self.inst_mut(side).proc;
        let id = poll_until(
            &format!("syncthing {side} to answer its REST API on {gui}"),
            START_TIMEOUT,
            POLL,
            |status| {
                proc.check_alive()?;
                let r = http::request(
                    gui,
                    "GET",
                    "/rest/system/status",
                    &[("X-API-Key", &key)],
                    b"",
                    Duration::from_secs(5),
                );
                match r {
                    Ok(r) if r.is_success() => {
                        let v: Value = serde_json::from_slice(&r.body).map_err(|e| {
                            failed(format!("syncthing {side}: /rest/system/status: {e}"))
                        })?;
                        Ok(v["myID"].as_str().map(str::to_string))
                    }
                    Ok(r) => {
                        *status = format!("HTTP {}: {}", r.status, r.text().trim());
                        Ok(None)
                    }
                    Err(e) => {
                        *status = e.to_string();
                        Ok(None)
                    }
                }
            },
            || format!("syncthing {side}'s log:\n{}", log_tail(&log, 40)),
        )?;
        self.inst_mut(side).device_id = id;
        Ok(())
    }

    /// Both sides' folder status and connections, for a timeout's message.
    fn statuses(&self) -> String {
        let mut out = String::new();
        for side in [Side::A, Side::B] {
            let st = self
                .folder_status(side)
                .map(|v| v.to_string())
                .unwrap_or_else(|e| e.to_string());
            let conn = self
                .rest(side, "GET", "/rest/system/connections", None)
                .map(|v| v["connections"][self.device_id(side.peer())].to_string())
                .unwrap_or_else(|e| e.to_string());
            out.push_str(&format!(
                "syncthing {side}: folder status {st}\nsyncthing {side}: connection to {}: {conn}\n",
                side.peer()
            ));
        }
        out
    }

    /// The tail of both logs, for a timeout's message.
    fn logs(&self) -> String {
        [Side::A, Side::B]
            .iter()
            .map(|&s| {
                format!(
                    "--- syncthing {s}'s log ({}):\n{}",
                    self.inst(s).proc.log().display(),
                    self.log_tail(s, 25)
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Instance {
    /// Generates `side`'s home, writes its config and starts `syncthing serve`.
    fn launch(
        binary: &Path,
        side: Side,
        homes: &Path,
        folder: &Path,
        gui_port: u16,
        listen_port: u16,
    ) -> Result<Instance> {
        let home = homes.join(side.name());
        std::fs::create_dir_all(folder).map_err(|e| {
            failed(format!(
                "syncthing {side}: creating {}: {e}",
                folder.display()
            ))
        })?;
        let out = Command::new(binary)
            .args([
                "generate",
                "--no-default-folder",
                "--skip-port-probing",
                "--home",
            ])
            .arg(&home)
            .output()
            .map_err(|e| {
                failed(format!(
                    "syncthing {side}: running {} generate: {e}",
                    binary.display()
                ))
            })?;
        if !out.status.success() {
            return Err(failed(format!(
                "syncthing {side}: `syncthing generate --home {}` failed ({}): {}{}",
                home.display(),
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        let api_key = format!("tether-test-key-{}", side.name());
        let gui = SocketAddr::from((Ipv4Addr::LOCALHOST, gui_port));
        let config_path = home.join("config.xml");
        let config = std::fs::read_to_string(&config_path).map_err(|e| {
            failed(format!(
                "syncthing {side}: reading {}: {e}",
                config_path.display()
            ))
        })?;
        let config = rewrite_config(&config, gui, &api_key, listen_port)
            .map_err(|e| failed(format!("syncthing {side}: {}: {e}", config_path.display())))?;
        std::fs::write(&config_path, config).map_err(|e| {
            failed(format!(
                "syncthing {side}: writing {}: {e}",
                config_path.display()
            ))
        })?;

        let mut cmd = Command::new(binary);
        cmd.args([
            "serve",
            "--no-browser",
            "--no-restart",
            "--no-upgrade",
            "--logflags=3",
            "--home",
        ])
        .arg(&home)
        .env("STNORESTART", "1")
        .env("STNOUPGRADE", "1")
        // Run as the inner process itself: without it, 1.19 forks a monitor's child even
        // with --no-restart, a grandchild this kit could kill but not reap.
        .env("STMONITORED", "yes")
        .env("HOME", &home);
        let proc = Proc::spawn(
            &format!("syncthing {side}"),
            cmd,
            &home.join("syncthing.log"),
        )?;
        Ok(Instance {
            side,
            folder: folder.to_path_buf(),
            home,
            gui,
            listen_port,
            api_key,
            device_id: String::new(),
            proc,
        })
    }
}

/// `config` (as `syncthing generate` writes it) with its `<gui>` and `<options>` elements
/// replaced by ours (see the module docs); every option not named keeps Syncthing's default.
fn rewrite_config(
    config: &str,
    gui: SocketAddr,
    api_key: &str,
    listen_port: u16,
) -> std::result::Result<String, String> {
    let gui_xml = format!(
        r#"<gui enabled="true" tls="false" debugging="false">
        <address>{gui}</address>
        <apikey>{api_key}</apikey>
        <theme>default</theme>
    </gui>"#
    );
    let options_xml = format!(
        r#"<options>
        <listenAddress>tcp://127.0.0.1:{listen_port}</listenAddress>
        <globalAnnounceEnabled>false</globalAnnounceEnabled>
        <localAnnounceEnabled>false</localAnnounceEnabled>
        <relaysEnabled>false</relaysEnabled>
        <natEnabled>false</natEnabled>
        <stunKeepaliveStartS>0</stunKeepaliveStartS>
        <stunKeepaliveMinS>0</stunKeepaliveMinS>
        <startBrowser>false</startBrowser>
        <urAccepted>-1</urAccepted>
        <urSeen>3</urSeen>
        <autoUpgradeIntervalH>0</autoUpgradeIntervalH>
        <crashReportingEnabled>false</crashReportingEnabled>
        <announceLANAddresses>false</announceLANAddresses>
        <restartOnWakeup>false</restartOnWakeup>
        <setLowPriority>false</setLowPriority>
        <minHomeDiskFree unit="%">0</minHomeDiskFree>
        <reconnectionIntervalS>1</reconnectionIntervalS>
    </options>"#
    );
    let config = replace_element(config, "<gui ", "</gui>", &gui_xml)?;
    replace_element(&config, "<options>", "</options>", &options_xml)
}

/// Replaces the first element that starts with `open` and ends with `close`.
fn replace_element(
    xml: &str,
    open: &str,
    close: &str,
    with: &str,
) -> std::result::Result<String, String> {
    let start = xml
        .find(open)
        .ok_or_else(|| format!("no {open}…{close} element"))?;
    let end = xml[start..]
        .find(close)
        .map(|i| start + i + close.len())
        .ok_or_else(|| format!("{open} is not closed by {close}"))?;
    Ok(format!("{}{with}{}", &xml[..start], &xml[end..]))
}

/// The start of `bytes` for a message.
fn preview(bytes: &[u8]) -> String {
    let cut = &bytes[..bytes.len().min(80)];
    let mut s = String::from_utf8_lossy(cut).into_owned();
    if bytes.len() > cut.len() {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_gui_and_options_and_keeps_the_rest() {
        let generated = "<configuration version=\"36\">\n<device id=\"X\"></device>\n\
            <gui enabled=\"true\" tls=\"false\" debugging=\"false\">\n<address>127.0.0.1:8384</address>\n\
            <apikey>random</apikey>\n</gui>\n<ldap></ldap>\n<options>\n<listenAddress>default</listenAddress>\n\
            </options>\n<defaults></defaults>\n</configuration>\n";
        let out = rewrite_config(generated, "127.0.0.1:4001".parse().unwrap(), "k", 4002).unwrap();
        assert!(out.contains("<address>127.0.0.1:4001</address>"));
        assert!(out.contains("<apikey>k</apikey>"));
        assert!(out.contains("<listenAddress>tcp://127.0.0.1:4002</listenAddress>"));
        assert!(!out.contains("random") && !out.contains("<listenAddress>default"));
        assert!(
            out.contains("<device id=\"X\"></device>") && out.contains("<defaults></defaults>")
        );
        assert!(
            rewrite_config("<configuration/>", "127.0.0.1:1".parse().unwrap(), "k", 2).is_err()
        );
    }
}
