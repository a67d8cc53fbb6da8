-- Argo CD resource action "redrive" for sundial.dev/ScheduledJob: sets the sundial.dev/redrive annotation to a
-- new token (the current UTC time); the operator acts once per new token and echoes it in
-- status.lastHandledRedrive. Only metadata.annotations changes.
local os = require("os")
local token = os.date("!%Y-%m-%dT%H:%M:%SZ")
if obj.metadata.annotations == nil then
  obj.metadata.annotations = {}
end
if obj.metadata.annotations["sundial.dev/redrive"] == token then
  -- Two requests within the same second: keep the token new.
  token = token .. "-" .. tostring(os.time())
end
obj.metadata.annotations["sundial.dev/redrive"] = token
return obj
