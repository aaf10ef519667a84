-- Argo CD health of an exagent ApprovalDecision
-- (argocd-cm key resource.customizations.health.exagent.io_ApprovalDecision).
--   Applied  -> Healthy
--   Rejected -> Degraded (the message says why: not authorized, a stale
--               revision or payload, the approval expired, ...)
--   no phase yet -> Progressing (the controller has not applied it)
-- A decision is write-once: a Rejected one stays Rejected; create a new
-- one (kubectl approve) rather than editing it.
-- Tested by test/health.
local hs = { status = "Progressing", message = "waiting for the exagent controller to apply the decision" }
local st = obj.status
if st == nil or st.phase == nil or st.phase == "" then
  return hs
end
if st.phase == "Applied" then
  hs.status = "Healthy"
elseif st.phase == "Rejected" then
  hs.status = "Degraded"
end
hs.message = st.phase
if st.message ~= nil and st.message ~= "" then
  hs.message = hs.message .. ": " .. st.message
end
return hs
