-- Headless Neovim 0.7 test of a real agent's turn that outlives its editor: Claude Code over
-- ACP (@zed-industries/claude-agent-acp from tests/agents) in a temporary HOME, answering
-- through the test kit's fake model API, with the stock LSP client and
-- `tether serve --stdio --remote=auto` (the forwarder to the per-user daemon).
--
-- Run twice by tests/nvim/run.sh, in one TETHER_TEST_DIR with a private runtime folder and a
-- fake model (`tether-fake-model --reply <the numbered words> --chunk-delay-ms N`) that
-- streams its answer slowly and holds it (a `stall` fault) after some of it:
--   PHASE=1: start a Claude session in the daemon, prompt, quit Neovim mid-turn once some
--            of the answer has streamed, leaving what it saw in phase1.json (the session,
--            the last seq, the text so far, the daemon's status and its process tree);
--   PHASE=2: a second Neovim checks that the turn still runs, resumes the session with
--            afterSeq, lets the fake model finish the answer, and must receive the rest of
--            the text exactly once and in order, then the turn's end (end_turn), from the
--            same daemon, the same agent process and no process added.
-- Environment: TETHER_BIN, TETHER_TEST_DIR, TETHER_RUNTIME_DIR, PHASE, TETHER_FAKE_URL,
-- TETHER_FAKE_REPLY (the whole answer), TETHER_CLAUDE_ENTRY (claude-agent-acp's
-- dist/index.js), TETHER_AGENT_MARKER (put in the agent's environment, to find its
-- processes).
-- Exits 0 when every check passed, 1 otherwise, printing each check.

local function env(name)
  local value = os.getenv(name)
  assert(value, name .. " is not set")
  return value
end
local bin = env("TETHER_BIN")
local dir = env("TETHER_TEST_DIR")
local runtime = env("TETHER_RUNTIME_DIR")
local phase = assert(tonumber(env("PHASE")), "PHASE is not a number")
local fake_url = env("TETHER_FAKE_URL")
local reply = env("TETHER_FAKE_REPLY")
local entry = env("TETHER_CLAUDE_ENTRY")
local marker = env("TETHER_AGENT_MARKER")
local workspace = dir .. "/workspace"
local home = dir .. "/claude-home"
local state_file = dir .. "/phase1.json"
-- Generous: Claude Code starts in seconds, but the machine may be loaded.
local LONG = 120000
vim.fn.mkdir(workspace, "p")
vim.fn.mkdir(home .. "/tmp", "p")

local t = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":h") .. "/lib.lua")
local expect, finish = t.expect, t.finish

local read_file, write_file = t.read_file, t.write_file

-- `tether daemon status --json` of the private runtime folder (nil when it fails, saying why).
local function daemon_status()
  local out = vim.fn.system({ "env", "TETHER_RUNTIME_DIR=" .. runtime, bin, "daemon", "status", "--json" })
  local code = vim.v.shell_error
  local ok, status = pcall(vim.json.decode, out)
  if code ~= 0 or not ok or type(status) ~= "table" then
    io.stdout:write(string.format("# tether daemon status --json: exit %d, output %q\n", code, out))
    return nil
  end
  return status
end

-- Every process: pid -> {ppid, cmd}, read from /proc.
local function process_table()
  local procs = {}
  for _, path in ipairs(vim.fn.glob("/proc/[0-9]*", false, true)) do
    local pid = tonumber(path:match("(%d+)$"))
    local stat = read_file(path .. "/stat")
    if pid and stat then
      -- The command name (in parentheses) may hold spaces: parse after its closing one.
      local ppid = tonumber(stat:match("^%d+ %(.*%) %S+ (%d+)"))
      -- Printable ASCII only: a process that sets its title (Claude Code's "claude") leaves
      -- whatever bytes were there after it.
      local cmd = (read_file(path .. "/cmdline") or ""):gsub("%z", " "):gsub("[^%w%p ]", "?"):gsub("%s+$", "")
      procs[pid] = { ppid = ppid, cmd = cmd }
    end
  end
  return procs
end

-- The daemon's process tree (the daemon and every descendant), as sorted "pid cmd" lines.
local function tree_of(root)
  local procs = process_table()
  local wanted, changed = { [root] = true }, true
  while changed do
    changed = false
    for pid, p in pairs(procs) do
      if not wanted[pid] and p.ppid and wanted[p.ppid] then
        wanted[pid], changed = true, true
      end
    end
  end
  local lines = {}
  for pid in pairs(wanted) do
    if procs[pid] then table.insert(lines, string.format("%d %s", pid, procs[pid].cmd)) end
  end
  table.sort(lines)
  return lines
end

-- The pids of the processes whose environment holds the agent's marker, sorted.
local function marked()
  local pids = {}
  local needle = "TETHER_TESTKIT_RUN=" .. marker
  for _, path in ipairs(vim.fn.glob("/proc/[0-9]*", false, true)) do
    local environ = read_file(path .. "/environ")
    if environ and ("\0" .. environ):find("\0" .. needle .. "\0", 1, true) then
      table.insert(pids, tonumber(path:match("(%d+)$")))
    end
  end
  table.sort(pids)
  return pids
end

local texts, max_seq, ended, resolved_at = {}, 0, nil, nil
local client_id = vim.lsp.start_client({
  name = "tether",
  cmd = { bin, "serve", "--stdio", "--remote", "auto", "--log-file", dir .. "/logs/forwarder" .. phase .. ".log" },
  cmd_env = { TETHER_LOG = "debug", TETHER_RUNTIME_DIR = runtime },
  root_dir = workspace,
  -- The same options in both phases: both editors attach to the same hub in the daemon.
  -- Claude's environment is that of tests/agents' harness (crates/tether-testkit/src/agents.rs).
  init_options = {
    storage = { dir = dir .. "/cache" },
    agents = {
      claude = {
        command = "node",
        args = { entry },
        protocol = "acp",
        env = {
          HOME = home,
          TMPDIR = home .. "/tmp",
          TERM = "dumb",
          NO_COLOR = "1",
          IS_SANDBOX = "1",
          ANTHROPIC_API_KEY = "tether-fake-key",
          ANTHROPIC_BASE_URL = fake_url,
          CLAUDE_CODE_MAX_RETRIES = "1",
          DISABLE_AUTOUPDATER = "1",
          DISABLE_TELEMETRY = "1",
          DISABLE_ERROR_REPORTING = "1",
          CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1",
          TETHER_TESTKIT_RUN = marker,
        },
      },
    },
    defaultAgent = "claude",
  },
  handlers = {
    ["session/update"] = function(_, params)
      if type(params.seq) == "number" and params.seq > max_seq then max_seq = params.seq end
      local u = params.update or {}
      if u.sessionUpdate == "agent_message_chunk" and u.content and type(u.content.text) == "string" then
        table.insert(texts, { seq = params.seq, text = u.content.text, after_resume = resolved_at ~= nil })
      end
    end,
    ["session/turnEnded"] = function(_, params)
      if type(params.seq) == "number" and params.seq > max_seq then max_seq = params.seq end
      ended = params
    end,
  },
})
expect(client_id ~= nil, "the stock client starts tether serve --remote=auto")
local client = vim.lsp.get_client_by_id(client_id)

local function wait(cond, ms)
  return vim.wait(ms or LONG, cond, 20)
end

local function request(method, params, ms)
  local done, response_err, response = false, nil, nil
  client.request(method, params, function(err, result)
    response_err, response, done = err, result, true
  end)
  wait(function() return done end, ms)
  return done, response_err, response
end

local function joined(list)
  local parts = {}
  for _, t in ipairs(list) do table.insert(parts, t.text) end
  return table.concat(parts)
end

expect(wait(function() return client.initialized end), "initialize completes through the daemon")

if phase == 1 then
  local done, err, started = request("session/resume", { workspace = { root = workspace } })
  expect(done and err == nil and started and started.outcome == "started",
    "a new Claude session starts in the daemon" .. (err and (": " .. vim.inspect(err)) or ""))
  local sid = started and started.sessionId
  -- The answer never comes to this editor: it quits mid-turn.
  client.request("session/prompt", { sessionId = sid, prompt = { { type = "text", text = "count for me" } } },
    function() end)
  -- Some of the answer (the fake holds the rest until phase 2 lets it go).
  expect(wait(function() return #texts >= 3 end), "Claude's answer streams to the first editor")
  local status = daemon_status()
  local session = status and status.sessions and status.sessions[1]
  expect(session and session.agentPgid ~= nil and session.turnRunning == true,
    "the daemon runs the session's agent, mid-turn")
  local so_far = joined(texts)
  expect(#so_far > 0 and #so_far < #reply and reply:sub(1, #so_far) == so_far,
    "what came so far is the start of the answer")
  expect(ended == nil, "the first editor quits before the turn ends")
  write_file(state_file, vim.json.encode({
    sessionId = sid, afterSeq = max_seq, text = so_far,
    daemonPid = status and status.pid, pgid = session and session.agentPgid,
    tree = status and tree_of(status.pid) or {}, agents = marked(),
  }))
  expect(pcall(vim.json.decode, read_file(state_file) or ""), "what it saw is saved for the second editor")
  -- Neovim quits with the turn running (its LSP client ends the forwarder as it exits).
  finish()
else
  local saved = read_file(state_file) or ""
  local decoded, state = pcall(vim.json.decode, saved)
  state = decoded and type(state) == "table" and state or {}
  expect(state.sessionId ~= nil, "the first editor left its session id" .. (state.sessionId and "" or (": " .. saved)))
  if state.sessionId == nil then
    client.stop()
    finish()
    return
  end
  local before = daemon_status()
  local s = before and before.sessions and before.sessions[1]
  expect(before and #before.sessions == 1 and s.sessionId == state.sessionId and s.turnRunning == true
    and s.clients == 0, "with no editor attached, the turn still runs in the daemon")
  local done, err, resumed = request("session/resume", {
    workspace = { root = workspace }, sessionId = state.sessionId, afterSeq = state.afterSeq,
  })
  resolved_at = vim.loop.now()
  expect(done and err == nil and resumed and resumed.outcome == "resumed",
    "the second editor takes the live session back" .. (err and (": " .. vim.inspect(err)) or ""))
  expect(resumed and resumed.breaker and resumed.breaker.attempts == 0, "without an agent attempt")
  expect(ended == nil, "the turn had not ended when the second editor attached")
  -- Let the fake model finish its answer (it streams the rest slowly).
  local out = vim.fn.system({ "curl", "-fsS", "-X", "POST", fake_url .. "/__fake/release" })
  expect(vim.v.shell_error == 0, "the fake model releases the rest of the answer: " .. out)
  expect(wait(function() return ended ~= nil end), "the turn's end reaches the second editor")
  expect(ended and ended.stopReason == "end_turn",
    "the turn ended normally (" .. vim.inspect(ended and (ended.stopReason or ended.error)) .. ")")
  local rest = joined(texts)
  local seqs_rise = true
  for i = 2, #texts do
    if texts[i].seq <= texts[i - 1].seq then seqs_rise = false end
  end
  local live = 0
  for _, t in ipairs(texts) do
    if t.seq > state.afterSeq and t.after_resume then live = live + 1 end
  end
  expect(seqs_rise and texts[1] and texts[1].seq > state.afterSeq, "every chunk came after afterSeq, in order")
  expect(state.text .. rest == reply, string.format(
    "the first editor's text and the second's make the answer exactly once (%d + %d of %d bytes)",
    #(state.text or ""), #rest, #reply))
  expect(live > 0, string.format("the rest of the turn streamed live to the second editor (%d chunks)", live))
  local after = daemon_status()
  local a = after and after.sessions and after.sessions[1]
  expect(after and after.pid == state.daemonPid, "the same daemon")
  expect(after and #after.sessions == 1 and a.agentPgid == state.pgid and a.turnRunning == false,
    "the same agent process group, and no other session")
  local tree = after and tree_of(after.pid) or {}
  expect(vim.deep_equal(tree, state.tree),
    "the daemon's process tree is the same (no process added or replaced): before "
      .. vim.inspect(state.tree) .. ", after " .. vim.inspect(tree))
  local agents = marked()
  expect(#agents > 0 and vim.deep_equal(agents, state.agents),
    "the agent's processes are the same: before " .. vim.inspect(state.agents) .. ", after " .. vim.inspect(agents))
  client.stop()
  expect(wait(function() return client.is_stopped() end, 10000), "the second editor detaches")
  finish()
end
