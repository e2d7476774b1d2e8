-- The README's Neovim snippet joining a session another editor started: run from a folder
-- whose session is live in the user's daemon (started from VS Code by the dist suite's
-- acceptance test, editors/vscode/test/e2e/bundled.e2e.test.mjs), the snippet's start-up
-- `session/resume` with `create = false` must attach to that live session (R-RESUME-11,
-- R-DAEMON-4): the same session id, no new agent. Then a prompt from Neovim runs on it, and
-- its answer streams into tether://chat.
--
-- Environment: TETHER_REPO (the checkout, for README.md), TETHER_TEST_DIR (a scratch folder
-- for the snippet's init.lua), TETHER_EXPECT_SESSION (the live session's id),
-- TETHER_NVIM_PROMPT (the prompt to send). The caller sets PATH (its first `tether` is the
-- one the snippet starts), HOME and the runtime folder so that `tether serve --stdio`
-- forwards to the daemon already running.
-- Exits 0 when every check passed, 1 otherwise, printing each check.

local repo = assert(os.getenv("TETHER_REPO"), "TETHER_REPO is not set")
local dir = assert(os.getenv("TETHER_TEST_DIR"), "TETHER_TEST_DIR is not set")
local expected = assert(os.getenv("TETHER_EXPECT_SESSION"), "TETHER_EXPECT_SESSION is not set")
local prompt = assert(os.getenv("TETHER_NVIM_PROMPT"), "TETHER_NVIM_PROMPT is not set")

local t = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":h") .. "/lib.lua")
local expect, finish, chat_text, wait_for = t.expect, t.finish, t.chat_text, t.wait_for_chat

local loaded, load_err = t.run_readme_snippet(repo, dir)
expect(loaded, "the README's snippet runs" .. (loaded and "" or (": " .. tostring(load_err))))
if not loaded then return finish() end

-- 1. The start-up resume finds the live session: it names it, and says nothing failed.
expect(wait_for("[session ", 60000), "tether://chat shows a session once the start-up resume answers:\n" .. chat_text())
local session_id, outcome = chat_text():match("%[session ([%w%-]+): (%a+)%]")
expect(session_id == expected,
  "the start-up resume attached to the live session " .. expected .. " (got " .. tostring(session_id) .. ")")
expect(outcome == "resumed", "its outcome is resumed (got " .. tostring(outcome) .. ")")
expect(not chat_text():find("no session yet", 1, true), "it did not answer nothingToResume")
expect(not chat_text():find("failed", 1, true), "nothing failed: " .. chat_text())

-- 2. A prompt from Neovim runs a turn of that same session; its answer streams in.
if session_id == expected then
  local sent, send_err = pcall(vim.cmd, "TetherPrompt " .. prompt)
  expect(sent, ":TetherPrompt runs" .. (sent and "" or (": " .. tostring(send_err))))
  expect(wait_for("[end_turn]", 60000), "the turn ends with its stop reason in tether://chat:\n" .. chat_text())
  expect(chat_text():find("> " .. prompt .. "\necho: " .. prompt, 1, true) ~= nil,
    "the agent's answer follows the prompt in tether://chat:\n" .. chat_text())
end

finish()
