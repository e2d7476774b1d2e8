-- Headless Neovim 0.7 test of a turn that outlives its editor, with the stock LSP client and
-- `tether serve --stdio --remote=auto` (the forwarder to the per-user daemon).
--
-- Run twice by tests/nvim/run.sh, in one TETHER_TEST_DIR with a private runtime folder:
--   PHASE=1: start a session, send a prompt whose turn streams 400 numbered updates at 200
--            a second, quit Neovim after the first 20 (mid-turn), leaving what it saw in
--            phase1.json;
--   PHASE=2: a second Neovim resumes the session after the last seq the first one saw,
--            and must receive the rest of the turn exactly once, in order, then its end,
--            from the same agent process.
-- Environment: TETHER_BIN, TETHER_TEST_DIR, TETHER_RUNTIME_DIR, PHASE.
-- Exits 0 when every check passed, 1 otherwise, printing each check.

local bin = assert(os.getenv("TETHER_BIN"), "TETHER_BIN is not set")
local dir = assert(os.getenv("TETHER_TEST_DIR"), "TETHER_TEST_DIR is not set")
local runtime = assert(os.getenv("TETHER_RUNTIME_DIR"), "TETHER_RUNTIME_DIR is not set")
local phase = assert(tonumber(os.getenv("PHASE")), "PHASE is not set")
local workspace = dir .. "/workspace"
local state_file = dir .. "/phase1.json"
local total = 400
vim.fn.mkdir(workspace, "p")

local t = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":h") .. "/lib.lua")
local expect, finish = t.expect, t.finish

local read_file, write_file = t.read_file, t.write_file

-- The scripted agent's script: the first prompt turn streams numbered chunks.
if phase == 1 then
  write_file(dir .. "/script.json", vim.fn.json_encode({
    loadSession = true,
    stateDir = dir .. "/agent",
    faults = { { method = "session/prompt", calls = { 1 },
      action = { kind = "stream", count = total, perSecond = 200 } } },
  }))
end

-- The daemon's live sessions, as `tether daemon status --json` gives them.
local function daemon_status()
  local out = vim.fn.system({ "env", "TETHER_RUNTIME_DIR=" .. runtime, bin, "daemon", "status", "--json" })
  if vim.v.shell_error ~= 0 then return nil end
  return vim.fn.json_decode(out)
end

local updates, ended = {}, nil
local client_id = vim.lsp.start_client({
  name = "tether",
  cmd = { bin, "serve", "--stdio", "--remote", "auto", "--log-file", dir .. "/logs/forwarder" .. phase .. ".log" },
  cmd_env = { TETHER_LOG = "debug", TETHER_RUNTIME_DIR = runtime },
  root_dir = workspace,
  -- The same options in both phases: both editors attach to the same hub in the daemon.
  init_options = {
    storage = { dir = dir .. "/cache" },
    agents = {
      scripted = {
        command = bin,
        args = { "scripted-agent", "--script", dir .. "/script.json" },
        protocol = "acp",
      },
    },
    defaultAgent = "scripted",
  },
  handlers = {
    ["session/update"] = function(_, params)
      local text = params.update and params.update.content and params.update.content.text
      local n = type(text) == "string" and tonumber(text:match("^(%d+)\n$")) or nil
      if n then table.insert(updates, { seq = params.seq, n = n }) end
    end,
    ["session/turnEnded"] = function(_, params) ended = params end,
  },
})
expect(client_id ~= nil, "the stock client starts tether serve --remote=auto")
local client = vim.lsp.get_client_by_id(client_id)

local function wait(cond, ms)
  return vim.wait(ms or 20000, cond, 10)
end

local function request(method, params)
  local done, response_err, response = false, nil, nil
  client.request(method, params, function(err, result)
    response_err, response, done = err, result, true
  end)
  wait(function() return done end, 30000)
  return done, response_err, response
end

expect(wait(function() return client.initialized end), "initialize completes through the daemon")

if phase == 1 then
  local done, err, started = request("session/resume", { workspace = { root = workspace } })
  expect(done and err == nil and started and started.outcome == "started", "a new session starts in the daemon")
  local sid = started and started.sessionId
  -- The prompt's answer never comes to this editor: it quits mid-turn.
  client.request("session/prompt", { sessionId = sid, prompt = { { type = "text", text = "count" } } }, function() end)
  expect(wait(function() return #updates >= 20 end), "the turn streams to the first editor")
  local status = daemon_status()
  local pgid = status and status.sessions and status.sessions[1] and status.sessions[1].agentPgid
  expect(pgid ~= nil, "the daemon runs the session's agent")
  local last = updates[#updates]
  write_file(state_file, vim.fn.json_encode({ sessionId = sid, afterSeq = last.seq, lastN = last.n, pgid = pgid }))
  expect(ended == nil, "the first editor quits before the turn ends")
  -- Neovim quits with the turn running (its LSP client ends the forwarder as it exits).
  finish()
else
  local state = vim.fn.json_decode(read_file(state_file) or "{}")
  expect(state.sessionId ~= nil, "the first editor left its session id")
  local done, err, resumed = request("session/resume", {
    workspace = { root = workspace }, sessionId = state.sessionId, afterSeq = state.afterSeq,
  })
  expect(done and err == nil and resumed and resumed.outcome == "resumed", "the second editor takes the live session back")
  expect(resumed and resumed.breaker and resumed.breaker.attempts == 0, "without an agent attempt")
  expect(wait(function() return ended ~= nil end, 30000), "the turn's end reaches the second editor")
  expect(ended and ended.stopReason == "end_turn", "the turn ended normally")
  local contiguous = #updates > 0
  for i, u in ipairs(updates) do
    if u.n ~= state.lastN + i or (i > 1 and u.seq <= updates[i - 1].seq) then contiguous = false end
  end
  expect(contiguous and updates[#updates].n == total,
    string.format("it got updates %d..%d exactly once, in order (got %d)", state.lastN + 1, total, #updates))
  local status = daemon_status()
  local sessions = status and status.sessions or {}
  expect(#sessions == 1 and sessions[1].agentPgid == state.pgid, "the same agent process, and no other")
  client.stop()
  expect(wait(function() return client.is_stopped() end, 10000), "the second editor detaches")
  finish()
end
