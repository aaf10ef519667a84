-- Argo CD health of an exagent AgentRun
-- (argocd-cm key resource.customizations.health.exagent.io_AgentRun).
--   AwaitingApproval, Uncertain        -> Suspended (a human decides next)
--   Waiting                            -> Progressing (on a timer, an object
--                                         or a callback; resumes on its own)
--   Failed, Denied, Expired, Cancelled -> Degraded
--   Succeeded                          -> Healthy
--   anything else (Queued, Running, …) -> Progressing
-- Tested by test/health against sample runs of every phase.
local hs = { status = "Progressing", message = "waiting for the exagent controller" }
if obj.status == nil or obj.status.phase == nil or obj.status.phase == "" then
  return hs
end
local st = obj.status
local phase = st.phase
local detail = phase
if st.reason ~= nil and st.reason ~= "" and st.reason ~= phase then
  detail = detail .. " (" .. st.reason .. ")"
end
if st.message ~= nil and st.message ~= "" then
  detail = detail .. ": " .. st.message
end
local where = ""
if obj.metadata ~= nil and obj.metadata.name ~= nil then
  where = obj.metadata.name
  if obj.metadata.namespace ~= nil then
    where = where .. " -n " .. obj.metadata.namespace
  end
end
if phase == "Succeeded" then
  hs.status = "Healthy"
elseif phase == "AwaitingApproval" then
  hs.status = "Suspended"
  local n = st.pendingApprovals or 0
  detail = detail .. " — " .. n .. " approval(s) pending: kubectl approve show " .. where
elseif phase == "Uncertain" then
  hs.status = "Suspended"
  detail = detail .. " — a call has no confirmed outcome: kubectl approve show " .. where .. ", then kubectl approve resolve"
elseif phase == "Waiting" then
  detail = detail .. " — it resumes on its own when the wait ends (kubectl approve cancel " .. where .. " stops it)"
elseif phase == "Failed" or phase == "Denied" or phase == "Expired" or phase == "Cancelled" then
  hs.status = "Degraded"
end
hs.message = detail
return hs
