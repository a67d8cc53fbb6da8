-- Argo CD resource actions for sundial.dev/ScheduledJob.
--   trigger  one run now (the sundial.dev/trigger token annotation); always offered.
--   redrive  new attempts for every current dead letter (the sundial.dev/redrive token annotation);
--            offered only while status.deadLetters is not empty.
-- Both edit only metadata.annotations: the spec stays as it is in Git.
local actions = {}
actions["trigger"] = { ["disabled"] = false, ["iconClass"] = "fa fa-fw fa-play", ["displayName"] = "Trigger a run now" }
local deadLetters = nil
if obj.status ~= nil then
  deadLetters = obj.status.deadLetters
end
actions["redrive"] = {
  ["disabled"] = deadLetters == nil or #deadLetters == 0,
  ["iconClass"] = "fa fa-fw fa-redo",
  ["displayName"] = "Redrive dead letters",
}
return actions
