-- What every Neovim test here shares: TAP-like checks, the closing "N passed, N failed" line
-- (which also sets Neovim's exit status), and reading and writing whole files.
--
--   local t = dofile(vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":h") .. "/lib.lua")
--   t.expect(ok, "what was checked")   -- prints "ok   - …" or "FAIL - …"
--   t.finish()                         -- prints the counts, quits 0 or 1
local M = { checks = 0, failures = 0 }

function M.expect(ok, what)
  M.checks = M.checks + 1
  if ok then
    io.stdout:write("ok   - " .. what .. "\n")
  else
    M.failures = M.failures + 1
    io.stdout:write("FAIL - " .. what .. "\n")
  end
end

function M.finish()
  io.stdout:write(string.format("%d passed, %d failed\n", M.checks - M.failures, M.failures))
  vim.cmd(M.failures == 0 and "qall!" or "cquit! 1")
end

-- The whole text of `path`, or nil when it cannot be read.
function M.read_file(path)
  local f = io.open(path, "r")
  if not f then return nil end
  local text = f:read("*a")
  f:close()
  return text
end

-- Writes `text` to `path` whole; any failure is an error.
function M.write_file(path, text)
  local f = assert(io.open(path, "w"))
  assert(f:write(text))
  assert(f:close())
end

-- Runs the README's Neovim snippet verbatim: the Lua block between
-- `<!-- readme-snippet:nvim:begin -->` and `<!-- readme-snippet:nvim:end -->` of
-- `repo`/README.md, written to `dir`/init.lua and run with `dofile`. Returns true, or false
-- and why not (no marked block, or the error the snippet raised).
function M.run_readme_snippet(repo, dir)
  local readme = M.read_file(repo .. "/README.md")
  if not readme then return false, repo .. "/README.md is not readable" end
  local begin_marker = "<!-- readme-snippet:nvim:begin -->\n```lua\n"
  local end_marker = "```\n<!-- readme-snippet:nvim:end -->"
  local from = select(2, readme:find(begin_marker, 1, true))
  local to = from and readme:find(end_marker, from, true)
  if not (from and to) then return false, "README.md marks no Neovim snippet as a ```lua block" end
  local snippet_file = dir .. "/init.lua"
  M.write_file(snippet_file, readme:sub(from + 1, to - 1))
  local loaded, err = pcall(dofile, snippet_file)
  if not loaded then return false, "the snippet raised an error: " .. tostring(err) end
  return true
end

-- The whole text of the snippet's tether://chat buffer ("" before it exists).
function M.chat_text()
  local buf = vim.fn.bufnr("tether://chat")
  if buf == -1 then return "" end
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
end

-- Waits up to `ms` (default 30 s) for `text` to appear in tether://chat; true when it did.
function M.wait_for_chat(text, ms)
  return vim.wait(ms or 30000, function() return M.chat_text():find(text, 1, true) ~= nil end, 20)
end

return M
