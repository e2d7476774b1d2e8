# Sourced by the suites where an ACP client drives a real ACP agent (tests/agents, pinned:
# claude-agent-acp, which speaks the Anthropic Messages API, and codex-acp, which speaks the
# OpenAI Responses API) against the test kit's fake model API (tests/acpx/real-agents.sh,
# tests/toad/real-agent.sh). The caller defines `repo` and `die`, and has set a private HOME.
#
#   real_agent_setup NAME URL   for agent NAME against the fake model API at URL, exports the
#                               agent's environment and sets `cmd` (the agent's command line,
#                               an array) and `store` (the folder where it keeps its sessions).
#                               The recipes are the test kit's
#                               (crates/tether-testkit/src/agents.rs), which names their sources.
#   real_agent_config DIR NAME  prints a Tether configuration (the same JSON as
#                               `initializationOptions`) with agent NAME running `cmd`, the
#                               default agent, and Tether's cache in DIR/cache.

real_agent_setup() {
  local modules="$repo/tests/agents/node_modules"
  case "$1" in
    claude)
      cmd=("$modules/.bin/claude-agent-acp")
      store="$HOME/.claude/projects"
      export IS_SANDBOX=1 ANTHROPIC_API_KEY=tether-fake-key ANTHROPIC_BASE_URL="$2" \
        CLAUDE_CODE_MAX_RETRIES=1 DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 \
        DISABLE_ERROR_REPORTING=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 ;;
    codex)
      cmd=("$modules/@zed-industries/codex-acp-linux-x64/bin/codex-acp")
      local kv
      for kv in model_provider=stub model=gpt-5.4 model_providers.stub.name=stub \
                "model_providers.stub.base_url=$2/v1" model_providers.stub.env_key=OPENAI_API_KEY \
                model_providers.stub.wire_api=responses model_providers.stub.request_max_retries=1 \
                model_providers.stub.stream_max_retries=1; do
        cmd+=(-c "$kv")
      done
      export CODEX_HOME="$HOME/.codex" OPENAI_API_KEY=tether-fake-key
      store="$CODEX_HOME/sessions"
      mkdir -p "$CODEX_HOME" ;;
    *) die "unknown agent $1 (claude or codex)" ;;
  esac
  [ -x "${cmd[0]}" ] || die "$1's ACP agent is not installed (${cmd[0]}): run tests/agents/install.sh"
}

real_agent_config() {
  python3 - "$1" "$2" "${cmd[@]}" <<'PY'
import json, sys
w, name, program, *args = sys.argv[1:]
print(json.dumps({"storage": {"dir": w + "/cache"}, "defaultAgent": name,
                  "agents": {name: {"command": program, "args": args, "protocol": "acp"}}}))
PY
}
