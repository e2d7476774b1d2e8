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

return M
