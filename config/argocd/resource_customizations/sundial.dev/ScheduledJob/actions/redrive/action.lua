-- Argo CD resource action "redrive" for sundial.dev/ScheduledJob: sets the sundial.dev/redrive annotation to a new
-- token; the operator acts once per new token and echoes it in status.lastHandledRedrive. The token is a
-- number one above the larger of the current token and status.lastHandledRedrive (where either is not a
-- number, e.g. the UTC time kubectl sundial writes, it counts as 0), so it always differs from both, and the
-- output depends on nothing but the object: no clock (Argo CD's action tests compare outputs exactly). Only
-- metadata.annotations changes.
local key = "sundial.dev/redrive"
if obj.metadata.annotations == nil then
  obj.metadata.annotations = {}
end
local latest = tonumber(obj.metadata.annotations[key]) or 0
if obj.status ~= nil then
  local handled = tonumber(obj.status.lastHandledRedrive) or 0
  if handled > latest then
    latest = handled
  end
end
obj.metadata.annotations[key] = tostring(latest + 1)
return obj
