-- Argo CD health check for sundial.dev/ScheduledJob (Lua 5.1 with the libraries Argo CD opens: base, table and a
-- "safe" os with time and date only; no string or math library, no string methods).
--
-- The lessons of Argo CD's CronJob health check (argo-cd issues #24428, #24429, PR #25551) applied:
--   Degraded     only when the spec itself is wrong: Ready=False with reason InvalidSpec or
--                InvalidSchedule. A failed run is the workload's business, not the object's health.
--   Progressing  until the operator has observed the current generation
--                (status.observedGeneration == metadata.generation).
--   Healthy      everything else, including suspended objects (spec.suspend or the dead-letter
--                circuit: Argo CD's "Suspended" health would mark the whole Application Suspended),
--                complete one-offs, and objects with dead letters, whose count and newest entry are
--                shown in the message (visible, but not Degraded: dead letters never block later runs).
local hs = {}

local DEGRADED_REASONS = { InvalidSpec = true, InvalidSchedule = true }

local function condition(status, kind)
  if status.conditions == nil then
    return nil
  end
  for _, c in ipairs(status.conditions) do
    if c.type == kind then
      return c
    end
  end
  return nil
end

local function describe(c)
  local text = c.reason or ""
  if c.message ~= nil and c.message ~= "" then
    text = text .. ": " .. c.message
  end
  return text
end

local generation = obj.metadata.generation
local status = obj.status

if status == nil or status.observedGeneration == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the Sundial operator to observe this ScheduledJob"
  return hs
end

if generation ~= nil and status.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the Sundial operator to observe generation " .. generation
    .. " (observed " .. status.observedGeneration .. ")"
  return hs
end

local ready = condition(status, "Ready")
if ready ~= nil and ready.status == "False" and DEGRADED_REASONS[ready.reason] then
  hs.status = "Degraded"
  hs.message = describe(ready)
  return hs
end

local parts = {}
local complete = condition(status, "Complete")
local suspended = condition(status, "Suspended")

if complete ~= nil and complete.status == "True" then
  table.insert(parts, "Complete (" .. describe(complete) .. ")")
elseif suspended ~= nil and suspended.status == "True" then
  table.insert(parts, "Suspended (" .. describe(suspended) .. ")")
elseif obj.spec ~= nil and obj.spec.suspend == true then
  table.insert(parts, "Suspended (spec.suspend is true)")
elseif ready ~= nil and ready.status ~= "True" then
  table.insert(parts, "Not ready (" .. describe(ready) .. ")")
elseif status.nextScheduleTime ~= nil then
  table.insert(parts, "Next run at " .. status.nextScheduleTime)
else
  table.insert(parts, "Ready")
end

if status.active ~= nil and #status.active > 0 then
  table.insert(parts, #status.active .. " active run(s)")
end

local deadLetters = status.deadLetters
if deadLetters ~= nil and #deadLetters > 0 then
  local newest = deadLetters[#deadLetters]
  table.insert(parts, #deadLetters .. " dead-lettered run(s), newest " .. (newest.scheduledTime or "?")
    .. " (" .. (newest.reason or "?") .. "); redrive with the 'redrive' action")
else
  local dl = condition(status, "DeadLettered")
  if dl ~= nil and dl.status == "True" then
    table.insert(parts, "dead-lettered (" .. describe(dl) .. ")")
  end
end

hs.status = "Healthy"
hs.message = table.concat(parts, "; ")
return hs
