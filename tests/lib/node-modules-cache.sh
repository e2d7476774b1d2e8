# Sourced by the install scripts (tests/agents/install.sh, editors/vscode/scripts/install-e2e.sh):
# a node_modules folder kept in the per-user cache outside the checkout, so that a fresh clone
# on a machine that installed it before copies it back instead of running npm again (code-server
# compiles native modules: minutes on two cores).
#
# A cached copy is keyed by the package's package.json and package-lock.json, Node's version
# (native modules are built for its ABI) and the machine, so a changed lock or another Node
# never reuses one. It is written whole under a temporary name and renamed, so a run that dies
# midway leaves no half copy. Copies with another key of the same name are removed once a new
# one is saved. Copies, not links: nothing a test writes into node_modules reaches the cache.
#
#   node_modules_key DIR                 prints the key of DIR's package
#   node_modules_current DIR             whether DIR/node_modules was installed for that key
#   node_modules_restore DIR NAME        copies the cached NAME for DIR's key into DIR; fails
#                                        when there is none
#   node_modules_save DIR NAME           caches DIR/node_modules as NAME for DIR's key and
#                                        marks DIR/node_modules as installed for it
#
# TETHER_CACHE_DIR moves the cache (default ~/.cache/tether, as tests/run-all.sh);
# TETHER_NODE_MODULES_CACHE=off turns it off.

node_modules_cache_root="${TETHER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tether}/node_modules"

node_modules_key() {
  { cat "$1/package.json" "$1/package-lock.json"; node --version; uname -sm; } | sha256sum | cut -c1-16
}

node_modules_current() {
  [ -f "$1/node_modules/.tether-key" ] && [ "$(cat "$1/node_modules/.tether-key")" = "$(node_modules_key "$1")" ]
}

node_modules_restore() {
  local dir="$1" name="$2" key cached
  [ "${TETHER_NODE_MODULES_CACHE:-on}" = off ] && return 1
  key="$(node_modules_key "$dir")"
  cached="$node_modules_cache_root/$name-$key"
  [ -f "$cached/node_modules/.tether-key" ] || return 1
  rm -rf "$dir/node_modules"
  cp -a "$cached/node_modules" "$dir/node_modules" || { rm -rf "$dir/node_modules"; return 1; }
  echo "node_modules of $name copied from the cache ($cached)"
}

node_modules_save() {
  local dir="$1" name="$2" key tmp old
  key="$(node_modules_key "$dir")"
  echo "$key" > "$dir/node_modules/.tether-key"
  [ "${TETHER_NODE_MODULES_CACHE:-on}" = off ] && return 0
  mkdir -p "$node_modules_cache_root" && chmod 700 "$(dirname "$node_modules_cache_root")" || return 0
  tmp="$(mktemp -d "$node_modules_cache_root/.$name-XXXXXX")"
  if cp -a "$dir/node_modules" "$tmp/node_modules"; then
    rm -rf "$node_modules_cache_root/$name-$key"
    mv "$tmp" "$node_modules_cache_root/$name-$key"
    for old in "$node_modules_cache_root/$name"-*; do
      [ "$old" = "$node_modules_cache_root/$name-$key" ] || rm -rf "$old"
    done
  else
    rm -rf "$tmp"
    echo "warning: could not cache the node_modules of $name (the install itself is fine)" >&2
  fi
}
