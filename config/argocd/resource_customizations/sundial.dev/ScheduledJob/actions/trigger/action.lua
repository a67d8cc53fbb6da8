-- Argo CD resource action "trigger" for sundial.dev/ScheduledJob: sets the sundial.dev/trigger annotation to a
-- new token (the current UTC time); the operator acts once per new token and echoes it in
-- status.lastHandledTrigger. Only metadata.annotations changes.
local os = require("os")
local token = os.date("!%Y-%m-%dT%H:%M:%SZ")
if obj.metadata.annotations == nil then
  obj.metadata.annotations = {}
end
if obj.metadata.annotations["sundial.dev/trigger"] == token then
  -- Two requests within the same second: keep the token new.
  token = token .. "-" .. tostring(os.time())
end
obj.metadata.annotations["sundial.dev/trigger"] = token
return obj
