-- Argo CD health check for sundial.dev/ScheduledJob.
--
-- Written for the VM Argo CD gives argocd-cm customizations (useOpenLibs off): the base, table and
-- package libraries and require("os") with time and date only. No string or math library, so no
-- string methods and no string.format: text is built with "..".
--
--   Progressing  being deleted (metadata.deletionTimestamp), or the operator has not yet observed
--                this generation (no status, or status.observedGeneration < metadata.generation)
--   Degraded     something to fix in Git: Ready=False (InvalidSpec, InvalidSchedule), or the newest
--                dead letter is InvalidJobTemplate (the API server refused the Job) with no success since
--   Healthy      a one-off whose run has ended (Complete=True)
--   Suspended    spec.suspend is true, or Suspended=True (reason ConsecutiveDeadLetters: the
--                dead-letter circuit is open until the dead letters are redriven or the spec changes)
--   Healthy      everything else; the message names the next and last runs, active runs and dead
--                letters (a failed run is the workload's business, not the object's health)
local hs = {}

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

local function count(list)
  if list == nil then
    return 0
  end
  return #list
end

local function finish(state, message)
  hs.status = state
  hs.message = message
  return hs
end

if obj.metadata.deletionTimestamp ~= nil then
  return finish("Progressing", "Pending deletion")
end

local status = obj.status
local generation = obj.metadata.generation
if status == nil or status.observedGeneration == nil then
  return finish("Progressing", "Waiting for the Sundial operator to observe this ScheduledJob")
end
if generation ~= nil and status.observedGeneration < generation then
  return finish("Progressing", "Waiting for the Sundial operator to observe generation " .. generation
    .. " (observed " .. status.observedGeneration .. ")")
end

local ready = condition(status, "Ready")
if ready ~= nil and ready.status == "False" then
  return finish("Degraded", describe(ready))
end

local deadLetters = status.deadLetters or {}
local newest = deadLetters[#deadLetters]
if newest ~= nil and newest.reason == "InvalidJobTemplate"
    and (status.lastSuccessfulTime == nil or status.lastSuccessfulTime < (newest.deadLetteredAt or "")) then
  return finish("Degraded", "InvalidJobTemplate: the API server refused the Job of the run at "
    .. (newest.scheduledTime or "?") .. ": " .. (newest.message or "") .. " (fix spec.jobTemplate, then redrive)")
end

local complete = condition(status, "Complete")
if complete ~= nil and complete.status == "True" then
  return finish("Healthy", "Complete (" .. describe(complete) .. ")")
end

local suspended = condition(status, "Suspended")
if obj.spec ~= nil and obj.spec.suspend == true then
  return finish("Suspended", "Suspended: spec.suspend is true")
end
if suspended ~= nil and suspended.status == "True" then
  if suspended.reason == "ConsecutiveDeadLetters" then
    return finish("Suspended", "Suspended by the dead-letter circuit: " .. (suspended.message or ""))
  end
  return finish("Suspended", "Suspended (" .. describe(suspended) .. ")")
end

local parts = {}
if status.nextScheduleTime ~= nil then
  table.insert(parts, "Next run at " .. status.nextScheduleTime)
else
  table.insert(parts, "No further runs")
end
if status.lastScheduleTime ~= nil then
  local last = "last run at " .. status.lastScheduleTime
  if status.lastSuccessfulTime ~= nil then
    last = last .. ", last success at " .. status.lastSuccessfulTime
  else
    last = last .. ", no success yet"
  end
  table.insert(parts, last)
end
if count(status.active) > 0 then
  table.insert(parts, count(status.active) .. " active run(s)")
end
if count(status.pendingRetries) > 0 then
  table.insert(parts, count(status.pendingRetries) .. " run(s) waiting to retry")
end
if newest ~= nil then
  table.insert(parts, #deadLetters .. " dead-lettered run(s), newest " .. (newest.scheduledTime or "?")
    .. " (" .. (newest.reason or "?") .. "); redrive with the 'redrive' action")
end
return finish("Healthy", table.concat(parts, "; "))
