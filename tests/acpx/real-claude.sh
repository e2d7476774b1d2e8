#!/usr/bin/env bash
# The acpx restart story with the real claude-agent-acp: tests/acpx/real-agents.sh for Claude
# alone (kept for callers of this name; real-agents.sh runs Claude and Codex).
# Usage: tests/acpx/real-claude.sh [target dir]
exec "$(dirname "${BASH_SOURCE[0]}")/real-agents.sh" "${1:-}" claude
