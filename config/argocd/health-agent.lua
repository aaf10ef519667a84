-- Argo CD health of an exagent Agent
-- (argocd-cm key resource.customizations.health.exagent.io_Agent).
--   not checked yet, or its check is of an older generation -> Progressing
--   Ready True                                              -> Healthy
--   Ready False (a Secret, a server, a schema, a delegate)  -> Degraded
--   Ready Unknown (a check under way)                       -> Progressing
-- The message is the Ready condition's reason and message: what to fix.
-- Tested by test/health against sample Agents of every state.
local hs = { status = "Progressing", message = "waiting for the exagent controller to check the Agent" }
local gen = 0
if obj.metadata ~= nil and obj.metadata.generation ~= nil then
  gen = obj.metadata.generation
end
local st = obj.status
if st == nil or st.observedGeneration == nil or st.observedGeneration < gen or st.conditions == nil then
  return hs
end
for _, c in ipairs(st.conditions) do
  if c.type == "Ready" then
    if c.observedGeneration ~= nil and c.observedGeneration < gen then
      return hs
    end
    local detail = c.reason or ""
    if c.message ~= nil and c.message ~= "" then
      detail = detail .. ": " .. c.message
    end
    if c.status == "True" then
      hs.status = "Healthy"
    elseif c.status == "False" then
      hs.status = "Degraded"
    end
    hs.message = detail
    return hs
  end
end
return hs
