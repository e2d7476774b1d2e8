-- The Neovim half of tests/lsp/test_two_clients.py: a headless Neovim 0.7 with the stock LSP
-- client, attached through the daemon to the session the pytest-lsp client started. It
-- writes everything it receives as JSON lines to TETHER_EVENTS; the test (pytest) checks them.
--
-- What it does, each step waiting on a message:
--   1. starts `tether serve --stdio --remote=auto` with TETHER_INIT_OPTIONS (the pytest
--      client's initializationOptions, so both share the daemon's hub) and resumes
--      TETHER_SESSION_ID: {"event":"resumed","result":…};
--   2. records every session/update, session/turnEnded and session/permissionResolved;
--   3. once the first turn (the pytest client's prompt) has ended, sends its own prompt
--      (TETHER_PROMPT), whose turn asks permission: {"event":"prompted"}, then
--      {"event":"answered","result":…} when the turn's answer comes;
--   4. holds the permission question it is asked ({"event":"question","params":…}) until
--      session/permissionResolved settles it (answered in the other client), then answers
--      it late with "reject" (the daemon ignores a late answer): {"event":"lateAnswer"};
--   5. once its turn has ended and the question was resolved, detaches and quits:
--      {"event":"done"} (exit 0), or {"event":"timeout","waiting":…} (exit 1).
-- Environment: TETHER_BIN, TETHER_RUNTIME_DIR, TETHER_TEST_DIR, TETHER_WORKSPACE,
-- TETHER_INIT_OPTIONS, TETHER_SESSION_ID, TETHER_PROMPT, TETHER_EVENTS.

local function env(name)
  local value = os.getenv(name)
  assert(value, name .. " is not set")
  return value
end
local bin = env("TETHER_BIN")
local runtime = env("TETHER_RUNTIME_DIR")
local dir = env("TETHER_TEST_DIR")
local workspace = env("TETHER_WORKSPACE")
local options = vim.fn.json_decode(env("TETHER_INIT_OPTIONS"))
local sid = env("TETHER_SESSION_ID")
local prompt = env("TETHER_PROMPT")
local events_path = env("TETHER_EVENTS")
local LONG = 60000

local events = assert(io.open(events_path, "a"))
local function record(event)
  assert(events:write(vim.fn.json_encode(event) .. "\n"))
  assert(events:flush())
end

local function wait(cond, what)
  if vim.wait(LONG, cond, 20) then return true end
  record({ event = "timeout", waiting = what })
  events:close()
  vim.cmd("cquit! 1")
  return false
end

local turns_ended, resolved = 0, nil
local client_id = vim.lsp.start_client({
  name = "tether",
  cmd = { bin, "serve", "--stdio", "--remote", "auto", "--log-file", dir .. "/logs/forwarder-nvim.log" },
  cmd_env = { TETHER_LOG = "debug", TETHER_RUNTIME_DIR = runtime },
  root_dir = workspace,
  init_options = options,
  handlers = {
    ["session/update"] = function(_, params)
      record({ event = "notification", method = "session/update", params = params })
    end,
    ["session/turnEnded"] = function(_, params)
      record({ event = "notification", method = "session/turnEnded", params = params })
      turns_ended = turns_ended + 1
    end,
    ["session/permissionResolved"] = function(_, params)
      record({ event = "notification", method = "session/permissionResolved", params = params })
      resolved = params
    end,
    -- Neovim 0.7 answers a server request with what its handler returns; the handler runs on
    -- the main loop, so it can wait there (other messages keep being handled meanwhile).
    ["session/requestPermission"] = function(_, params)
      record({ event = "question", params = params })
      if not wait(function() return resolved ~= nil end, "session/permissionResolved") then
        return nil, vim.lsp.rpc_response_error(-32603, "not resolved")
      end
      record({ event = "lateAnswer" })
      return { outcome = { outcome = "selected", optionId = "reject" } }
    end,
  },
})
local client = vim.lsp.get_client_by_id(client_id)
wait(function() return client.initialized end, "initialize")

local function request(method, params, on_result)
  client.request(method, params, function(err, result)
    on_result(err, result)
  end)
end

local resumed
request("session/resume", { workspace = { root = workspace }, sessionId = sid }, function(err, result)
  resumed = { err = err, result = result }
end)
wait(function() return resumed ~= nil end, "session/resume")
record({ event = "resumed", error = resumed.err, result = resumed.result })

-- The other client's prompt turn ends, then this one prompts.
wait(function() return turns_ended >= 1 end, "the first turn's session/turnEnded")
local answered
request("session/prompt", { sessionId = sid, prompt = { { type = "text", text = prompt } } }, function(err, result)
  answered = { err = err, result = result }
end)
record({ event = "prompted" })
wait(function() return answered ~= nil end, "the answer to session/prompt")
record({ event = "answered", error = answered.err, result = answered.result })
wait(function() return turns_ended >= 2 and resolved ~= nil end, "the second turn's end and the resolution")
client.stop()
wait(function() return client.is_stopped() end, "the client to stop")
record({ event = "done" })
events:close()
vim.cmd("qall!")
