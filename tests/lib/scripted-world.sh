# Sourced by the suites where an ACP client drives `tether acp` in front of the scripted agent
# (tests/acpx/run.sh, tests/toad/run.sh): one case's folder.
#
#   scripted_world WORLD TETHER    makes WORLD/{ws,agent}, the agent's script (no faults) and
#                                  WORLD/tether.json: the scripted agent as the default agent,
#                                  Tether's cache in WORLD/cache, short rate-limit waits
#   scripted_faults WORLD FAULTS   rewrites the script with FAULTS, a JSON array of the
#                                  scripted agent's faults (crates/tether-host, scripted agent)
#
# The agent keeps its sessions in WORLD/agent/sessions/<id>.json and appends every prompt it
# receives to WORLD/agent/prompts.jsonl.

scripted_faults() {
  printf '{"loadSession": true, "stateDir": "%s", "faults": %s}\n' "$1/agent" "$2" >"$1/script.json"
}

scripted_world() {
  local world="$1" tether="$2"
  mkdir -p "$world/ws" "$world/agent"
  scripted_faults "$world" '[]'
  cat >"$world/tether.json" <<EOF
{"storage": {"dir": "$world/cache"},
 "agents": {"scripted": {"command": "$tether", "protocol": "acp",
   "args": ["scripted-agent", "--script", "$world/script.json"]}},
 "defaultAgent": "scripted",
 "rateLimit": {"baseDelayMs": 100, "maxDelayMs": 2000, "maxRetries": 3, "jitter": "none"}}
EOF
}
