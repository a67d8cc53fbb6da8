-- The Lua VM of tests/unit/packaging/test_argocd.py: runs one Argo CD customization script in an
-- environment shaped like the gopher-lua VM that Argo CD builds for argocd-cm customizations
-- (util/lua/lua.go, runLua, with useOpenLibs off):
--   * only the base, table and package libraries, plus Argo CD's "safe os" (time and date), reached
--     through require("os"); OpenSafeOs registers those two functions under the name "table", so the
--     global os stays nil and table.time / table.date exist;
--   * no string, math, io, os or debug library, and no string methods (gopher-lua sets the string
--     metatable only when the string library is opened);
--   * globals obj and actionParams;
--   * a bounded run (Argo CD: a 1 s context deadline; here: an instruction budget).
-- The clock of os.time / os.date is the harness's `now`, so action outputs are reproducible.
return function(script, obj, params, now, budget)
  local function safe_date(format, t)
    return os.date(format or "%c", t or now)
  end
  local function safe_time(t)
    if t == nil then
      return now
    end
    return os.time(t)
  end
  local safe_os = { time = safe_time, date = safe_date }
  local tbl = {
    concat = table.concat, insert = table.insert, maxn = table.maxn, remove = table.remove,
    sort = table.sort, getn = table.getn, time = safe_time, date = safe_date,
  }
  local env = {
    assert = assert, error = error, getmetatable = getmetatable, ipairs = ipairs, next = next,
    pairs = pairs, pcall = pcall, print = function() end, rawequal = rawequal, rawget = rawget,
    rawset = rawset, select = select, setmetatable = setmetatable, tonumber = tonumber,
    tostring = tostring, type = type, unpack = unpack, xpcall = xpcall, _VERSION = "Lua 5.1",
    table = tbl, obj = obj, actionParams = params,
  }
  env._G = env
  local loaded = { table = tbl, _G = env }
  env.package = { loaded = loaded, preload = {} }
  env.require = function(name)
    if loaded[name] ~= nil then
      return loaded[name]
    end
    if name == "os" then
      return safe_os
    end
    error("module '" .. tostring(name) .. "' not found")
  end
  local fn, err = loadstring(script, "script")
  if fn == nil then
    error(err, 0)
  end
  setfenv(fn, env)
  local strings = debug.getmetatable("")
  local string_index = strings.__index
  strings.__index = nil
  debug.sethook(function() error("the script ran out of its instruction budget", 0) end, "", budget)
  local ok, result = pcall(fn)
  debug.sethook()
  strings.__index = string_index
  if not ok then
    error(result, 0)
  end
  return result
end
