#!/usr/bin/env bash
# Installs the reference MCP server @modelcontextprotocol/server-everything
# (pinned) with npm into a cache folder outside the repository, once, with a
# preload that binds every listen to 127.0.0.1 (its streamable HTTP mode
# listens on all interfaces). Prints the folder; the e2e suite finds it
# there (or in EXAGENT_MCP_EVERYTHING).
set -euo pipefail
version=2026.8.31
dir="${EXAGENT_MCP_EVERYTHING:-${XDG_CACHE_HOME:-$HOME/.cache}/exagent/mcp-everything}"
main="$dir/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
if [[ ! -f "$main" ]] || ! grep -q "\"version\": \"$version\"" "$dir/node_modules/@modelcontextprotocol/server-everything/package.json"; then
	mkdir -p "$dir"
	(cd "$dir" && npm install --no-audit --no-fund --silent "@modelcontextprotocol/server-everything@$version" >&2)
fi
cat >"$dir/loopback.cjs" <<'JS'
// Preload (node --require): every server listens on 127.0.0.1 only.
const net = require('net');
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (args[0] !== null && typeof args[0] === 'object') {
    args[0] = { ...args[0], host: '127.0.0.1' };
  } else if (typeof args[0] === 'number' || (typeof args[0] === 'string' && /^\d+$/.test(args[0]))) {
    if (typeof args[1] === 'string') args[1] = '127.0.0.1';
    else args.splice(1, 0, '127.0.0.1');
  }
  return listen.apply(this, args);
};
JS
echo "$dir"
