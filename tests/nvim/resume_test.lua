-- Headless Neovim 0.7 test of `tether serve` with no Tether-specific client code: the
-- stock LSP client (vim.lsp.start_client, client.request) and a window/showMessageRequest
-- handler that clicks "Start New Session", as a user would.
--
-- Run by tests/nvim/run.sh:
--   nvim --headless -u NONE -c "luafile tests/nvim/resume_test.lua"
-- Environment: TETHER_BIN (the tether binary), TETHER_TEST_DIR (a fresh temp folder).
-- Exits 0 when every check passed, 1 otherwise, printing each check.

local bin = assert(os.getenv("TETHER_BIN"), "TETHER_BIN is not set")
local dir = assert(os.getenv("TETHER_TEST_DIR"), "TETHER_TEST_DIR is not set")
local workspace = dir .. "/workspace"
vim.fn.mkdir(workspace, "p")

local t = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":h") .. "/lib.lua")
local expect, finish = t.expect, t.finish

local notifications = {}
local asked = {}

local function on_notification(method)
  return function(_, result, _, _)
    table.insert(notifications, { method = method, params = result })
  end
end

local client_id = vim.lsp.start_client({
  name = "tether",
  cmd = { bin, "serve", "--stdio", "--remote", "off", "--log-file", dir .. "/logs/tether.log" },
  cmd_env = { TETHER_LOG = "debug" },
  root_dir = workspace,
  init_options = {
    storage = { dir = dir .. "/cache" },
    agents = {
      scripted = {
        command = bin,
        args = { "scripted-agent", "--state-dir", dir .. "/agent" },
        protocol = "acp",
      },
    },
    defaultAgent = "scripted",
  },
  handlers = {
    ["window/showMessageRequest"] = function(_, params, _, _)
      table.insert(asked, params)
      for _, action in ipairs(params.actions or {}) do
        if action.title == "Start New Session" then
          return action
        end
      end
      return vim.NIL
    end,
    ["session/expired"] = on_notification("session/expired"),
    ["session/restored"] = on_notification("session/restored"),
    ["session/update"] = on_notification("session/update"),
    ["window/showMessage"] = on_notification("window/showMessage"),
    ["window/logMessage"] = on_notification("window/logMessage"),
    ["telemetry/event"] = on_notification("telemetry/event"),
  },
})
expect(client_id ~= nil, "the stock client starts tether serve")
local client = vim.lsp.get_client_by_id(client_id)

local function wait(cond, ms)
  return vim.wait(ms or 20000, cond, 20)
end

expect(wait(function() return client.initialized end), "initialize completes")
expect(
  client.server_capabilities.experimental ~= nil
    and client.server_capabilities.experimental.tether ~= nil
    and client.server_capabilities.experimental.tether.protocolVersion == 1,
  "the server advertises experimental.tether.protocolVersion = 1"
)

local function request(method, params)
  local done, response_err, response = false, nil, nil
  client.request(method, params, function(err, result)
    response_err, response, done = err, result, true
  end)
  wait(function() return done end, 30000)
  return done, response_err, response
end

-- 1. A workspace with nothing cached: a new session starts.
local done, err, started = request("session/resume", { workspace = { root = workspace } })
expect(done and err == nil, "session/resume answers")
expect(started and started.outcome == "started", "a workspace with no cache starts a new session")
local first = started and started.sessionId

-- 2. Resume the same session: it is live, so it resumes.
done, err, started = request("session/resume", { workspace = { root = workspace }, sessionId = first })
expect(done and err == nil and started.outcome == "resumed", "resuming the live session gives resumed")

-- 3. A session the agent has never seen: needsChoice at once, and the stock client is asked
--    through window/showMessageRequest; clicking "Start New Session" ends in session/expired.
local unknown = "00000000-dead-beef-0000-000000000000"
done, err, started = request("session/resume", { workspace = { root = workspace }, sessionId = unknown })
expect(done and err == nil, "resuming an unknown session answers")
expect(started and started.outcome == "needsChoice", "an unknown session needs the user's choice")
expect(started and started.error and started.error.kind == "sessionExpired", "the error is sessionExpired")
expect(started and started.breaker and started.breaker.attempts == 1, "sessionExpired opens the breaker with no retries")
expect(
  started and started.recovery and started.recovery.message == "Previous session not found",
  "the recovery dialog says \"Previous session not found\""
)
expect(wait(function() return #asked > 0 end), "the server asks through window/showMessageRequest")
local titles = {}
for _, a in ipairs((asked[1] or {}).actions or {}) do table.insert(titles, a.title) end
expect(table.concat(titles, "|") == "Try Again|Start New Session", "its actions are Try Again and Start New Session")

local expired
expect(wait(function()
  for _, n in ipairs(notifications) do
    if n.method == "session/expired" then expired = n.params return true end
  end
  return false
end), "session/expired arrives after Start New Session")
expect(expired and expired.previousSessionId == unknown, "session/expired names the unknown session as previous")
expect(expired and expired.sessionId ~= nil and expired.sessionId ~= unknown, "session/expired names a new session")

-- 4. Unknown methods and bad params are answered, and the server stays up.
done, err = request("session/nonsense", {})
expect(done and err ~= nil and err.code == -32601, "an unknown method answers -32601")
done, err = request("session/resume", { workspace = vim.empty_dict() })
expect(done and err ~= nil and err.code == -32602 and err.data and err.data.field == "workspace.root",
  "bad params answer -32602 naming workspace.root")

-- 5. Shut down cleanly.
client.stop()
expect(wait(function() return client.is_stopped() end, 10000), "the server stops on shutdown/exit")
finish()
