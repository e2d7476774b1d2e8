-- The README's Neovim snippet, run as written: this test reads README.md, takes the Lua block
-- between `<!-- readme-snippet:nvim:begin -->` and `<!-- readme-snippet:nvim:end -->`
-- unchanged, runs it in a headless Neovim 0.7 (`-u NONE`, so nothing else is configured), then
-- does what a user would: waits for the session line in tether://chat, types
-- `:TetherPrompt …`, reads the agent's answer back from the buffer, then finds the session
-- again with `:TetherSearch`.
--
-- Run by tests/nvim/run.sh, from the workspace folder (the snippet's `getcwd()`), with a PATH
-- whose first folder holds `tether` (the binary under test) and `claude-agent-acp` (a
-- wrapper that runs `tether scripted-agent --state-dir $TETHER_TEST_DIR/agent`), and HOME,
-- XDG_DATA_HOME and TETHER_RUNTIME_DIR inside TETHER_TEST_DIR: the snippet's
-- `tether serve --stdio` forwards to a daemon of the test's own, as a user's would.
-- Environment: TETHER_BIN, TETHER_TEST_DIR, TETHER_RUNTIME_DIR, TETHER_REPO (the checkout).
-- Exits 0 when every check passed, 1 otherwise, printing each check.

local bin = assert(os.getenv("TETHER_BIN"), "TETHER_BIN is not set")
local dir = assert(os.getenv("TETHER_TEST_DIR"), "TETHER_TEST_DIR is not set")
local runtime = assert(os.getenv("TETHER_RUNTIME_DIR"), "TETHER_RUNTIME_DIR is not set")
local repo = assert(os.getenv("TETHER_REPO"), "TETHER_REPO is not set")

local t = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":h") .. "/lib.lua")
local expect, finish = t.expect, t.finish

local read_file = t.read_file

-- 1. The snippet, verbatim.
local loaded, load_err = t.run_readme_snippet(repo, dir)
expect(loaded, "the README's snippet runs" .. (loaded and "" or (": " .. tostring(load_err))))
if not loaded then return finish() end

local chat_text, wait_for = t.chat_text, t.wait_for_chat

-- 2. It waits for `initialize`, then resumes with `create = false`: a workspace with nothing
-- cached starts no session and no agent (R-RESUME-11).
expect(wait_for("[no session yet"), "tether://chat says there is no session yet once the resume answers")
expect(vim.fn.isdirectory(dir .. "/agent") == 0,
  "no agent ran: the scripted agent makes its state folder when it starts")
expect(not chat_text():find("failed", 1, true), "nothing failed: " .. chat_text())

-- 3. :TetherPrompt starts a session, then sends a prompt turn; the answer streams into the
-- buffer, then the stop reason.
local sent, send_err = pcall(vim.cmd, "TetherPrompt hello from the README")
expect(sent, ":TetherPrompt exists and runs" .. (sent and "" or (": " .. tostring(send_err))))
if not sent then return finish() end
expect(vim.fn.bufwinnr(vim.fn.bufnr("tether://chat")) ~= -1, ":TetherPrompt shows tether://chat in a window")
expect(wait_for("[session "), "tether://chat shows the session :TetherPrompt started")
local session_id, outcome = chat_text():match("%[session ([%w%-]+): (%a+)%]")
expect(outcome == "started", "the prompt started a new session (got " .. tostring(outcome) .. ")")
expect(wait_for("[end_turn]"), "the turn ends with its stop reason in the buffer")
local text = chat_text()
expect(text:find("> hello from the README\necho: hello from the README", 1, true) ~= nil,
  "the agent's answer (session/update agent_message_chunk) follows the prompt in tether://chat:\n" .. text)

-- 4. The agent really got the prompt: the scripted agent records every prompt it receives.
local prompts = read_file(dir .. "/agent/prompts.jsonl") or ""
expect(prompts:find("hello from the README", 1, true) ~= nil, "the agent received the prompt")

-- 5. :TetherSearch finds the session by a word of its answer, with the snippet around it.
local searched, search_err = pcall(vim.cmd, "TetherSearch README")
expect(searched, ":TetherSearch exists and runs" .. (searched and "" or (": " .. tostring(search_err))))
expect(wait_for('[search "README": '), "the search's answer is in tether://chat:\n" .. chat_text())
local found = tonumber(chat_text():match('%[search "README": (%d+) found%]'))
expect(found == 1, "one session found (got " .. tostring(found) .. "):\n" .. chat_text())
expect(session_id ~= nil and chat_text():find(" " .. session_id .. " ", 1, true) ~= nil,
  "the hit is the session the prompt ran in:\n" .. chat_text())
expect(chat_text():find("«README»", 1, true) ~= nil, "its snippet marks the matched word:\n" .. chat_text())

-- 6. Through the daemon, the default: the session is live there.
local status_out = vim.fn.system({ "env", "TETHER_RUNTIME_DIR=" .. runtime, bin, "daemon", "status", "--json" })
local live = false
if vim.v.shell_error == 0 then
  local ok, status = pcall(vim.fn.json_decode, status_out)
  for _, s in ipairs(ok and status.sessions or {}) do
    if s.sessionId == session_id then live = true end
  end
end
expect(live, "the session is live in the user's daemon (tether daemon status --json):\n" .. status_out)

finish()
