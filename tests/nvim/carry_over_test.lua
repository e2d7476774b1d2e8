-- Headless Neovim 0.7 test of "Continue in a New Session" (R-CARRY-1, R-CARRY-2) with no
-- Tether-specific client code: the stock LSP client, and a window/showMessageRequest
-- handler that clicks "Continue in a New Session", as a user would.
--
-- A session is started and prompted, the server is stopped, and the scripted agent forgets
-- the session (its stored conversation is removed). A new server's resume then needs the
-- user's choice; the third action starts a new session primed with the conversation, which
-- the agent receives with its first prompt (its prompts.jsonl is read back).
--
-- Run by tests/nvim/run.sh:
--   nvim --headless -u NONE -c "luafile tests/nvim/carry_over_test.lua"
-- Environment: TETHER_BIN (the tether binary), TETHER_TEST_DIR (a fresh temp folder).
-- Exits 0 when every check passed, 1 otherwise, printing each check.

local bin = assert(os.getenv("TETHER_BIN"), "TETHER_BIN is not set")
local dir = assert(os.getenv("TETHER_TEST_DIR"), "TETHER_TEST_DIR is not set")
local workspace = dir .. "/workspace"
vim.fn.mkdir(workspace, "p")

local t = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":h") .. "/lib.lua")
local expect, finish = t.expect, t.finish

local function wait(cond, ms)
  return vim.wait(ms or 20000, cond, 20)
end

local notifications = {}
local asked = {}

local function on_notification(method)
  return function(_, result, _, _)
    table.insert(notifications, { method = method, params = result })
  end
end

-- A stock client; `answer` is the title clicked in window/showMessageRequest.
local function start(answer)
  local id = vim.lsp.start_client({
    name = "tether",
    cmd = { bin, "serve", "--stdio", "--remote", "off", "--log-file", dir .. "/logs/tether.log" },
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
          if action.title == answer then
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
  local client = vim.lsp.get_client_by_id(id)
  expect(client ~= nil and wait(function() return client.initialized end), "the stock client starts tether serve")
  return client
end

local function request(client, method, params)
  local done, response_err, response = false, nil, nil
  client.request(method, params, function(err, result)
    response_err, response, done = err, result, true
  end)
  wait(function() return done end, 30000)
  return done and response_err == nil, response
end

local function prompt(client, sid, text)
  return request(client, "session/prompt", { sessionId = sid, prompt = { { type = "text", text = text } } })
end

-- 1. A session with one exchange, then the server goes and the agent forgets the session.
local client = start(nil)
local ok, r = request(client, "session/resume", { workspace = { root = workspace } })
expect(ok and r.outcome == "started", "a new session starts")
local first = r and r.sessionId
ok, r = prompt(client, first, "remember the number 42")
expect(ok and r.stopReason == "end_turn", "the first prompt turn ends")
client.stop()
expect(wait(function() return client.is_stopped() end, 10000), "the first server stops")
expect(os.remove(dir .. "/agent/sessions/" .. first .. ".json") ~= nil, "the agent forgets the session")

-- 2. Resuming it needs the user; the stock client is asked and clicks the third action.
client = start("Continue in a New Session")
ok, r = request(client, "session/resume", { workspace = { root = workspace }, sessionId = first })
expect(ok and r.outcome == "needsChoice", "a forgotten session needs the user's choice")
expect(r and r.error and r.error.kind == "sessionExpired", "the error is sessionExpired")
expect(wait(function() return #asked > 0 end), "the server asks through window/showMessageRequest")
local titles = {}
for _, a in ipairs((asked[1] or {}).actions or {}) do table.insert(titles, a.title) end
expect(
  table.concat(titles, "|") == "Try Again|Continue in a New Session|Start New Session",
  "its actions are Try Again, Continue in a New Session and Start New Session"
)

local expired
expect(wait(function()
  for _, n in ipairs(notifications) do
    if n.method == "session/expired" then expired = n.params return true end
  end
  return false
end), "session/expired arrives after Continue in a New Session")
expect(expired and expired.previousSessionId == first, "session/expired names the forgotten session")
expect(expired and expired.choice == "newWithHistory", "session/expired says the choice was newWithHistory")
expect(expired and expired.carriedOver and expired.carriedOver.turns == 2, "two turns were carried over")
expect(
  expired and expired.carriedOver
    and expired.carriedOver.marker == "Context carried over from session " .. first .. ": 2 turns",
  "the marker names the session and the turns"
)

-- 3. The new session's first prompt turn: the agent receives the conversation first.
local new = expired and expired.sessionId
ok, r = prompt(client, new, "which number?")
expect(ok and r.stopReason == "end_turn", "the new session answers")
local lines = vim.fn.readfile(dir .. "/agent/prompts.jsonl")
local last = vim.fn.json_decode(lines[#lines])
expect(last.sessionId == new, "the agent's last prompt was the new session's")
local block = last.prompt[1] and last.prompt[1].text or ""
expect(#last.prompt == 2, "it had two content blocks")
expect(vim.startswith(block, "<tether-carry-over "), "the first is the marked carry-over block")
expect(block:find("remember the number 42", 1, true) ~= nil, "which holds the forgotten conversation")
expect(last.prompt[2] and last.prompt[2].text == "which number?", "the second is the user's prompt")

client.stop()
expect(wait(function() return client.is_stopped() end, 10000), "the server stops on shutdown/exit")
finish()
