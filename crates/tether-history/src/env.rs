//! The environment a store is located from: the agent's own (the editor's environment in
//! the daemon, R-DAEMON-7, with the agent's configured `env` over it), never assumed to be
//! this process's, so a test can point a reader at a temporary folder without touching
//! the process environment.

use std::collections::BTreeMap;
use std::path::PathBuf;

/// Environment variables by name. An empty value counts as unset (as the agents treat
/// `CLAUDE_CONFIG_DIR=` and `CODEX_HOME=`). `Debug` shows the names only: values can be
/// secrets.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Env {
    vars: BTreeMap<String, String>,
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.vars.keys()).finish()
    }
}

impl Env {
    /// This process's environment (variables whose name and value are UTF-8).
    #[must_use]
    pub fn from_process() -> Self {
        Self::from_vars(
            std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
        )
    }

    /// An environment holding exactly `vars`.
    pub fn from_vars<K: Into<String>, V: Into<String>>(
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Self {
            vars: vars
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// Sets (or replaces) `name`.
    pub fn set(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.vars.insert(name.into(), value.into());
    }

    /// The value of `name`, `None` when unset or empty.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// `$name` as a path, when set.
    #[must_use]
    pub fn path(&self, name: &str) -> Option<PathBuf> {
        self.get(name).map(PathBuf::from)
    }

    /// The home folder as the agents find it: `$HOME` on Unix, `%USERPROFILE%` on Windows
    /// ([`crate::sys::HOME_VARS`]).
    #[must_use]
    pub fn home(&self) -> Option<PathBuf> {
        crate::sys::HOME_VARS
            .iter()
            .find_map(|name| self.path(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_values_are_unset_and_debug_shows_no_values() {
        let home = crate::sys::HOME_VARS[0];
        let env = Env::from_vars([(home, "/h"), ("CODEX_HOME", ""), ("KEY", "secret")]);
        assert_eq!(env.home(), Some(PathBuf::from("/h")));
        assert_eq!(env.get("CODEX_HOME"), None);
        let debug = format!("{env:?}");
        assert!(
            debug.contains("KEY") && !debug.contains("secret"),
            "{debug}"
        );
    }

    /// The home folder is this platform's variable: Unix's `HOME` or Windows's
    /// `USERPROFILE`, never the other one (Node reads only `USERPROFILE` on Windows).
    #[test]
    fn the_home_is_the_platforms_own_variable() {
        let env = Env::from_vars([("HOME", "/home/ada"), ("USERPROFILE", r"C:\Users\Ada")]);
        let want = if crate::sys::HOME_VARS == ["HOME"] {
            "/home/ada"
        } else {
            r"C:\Users\Ada"
        };
        assert_eq!(env.home(), Some(PathBuf::from(want)));
        let other = if want == "/home/ada" {
            "USERPROFILE"
        } else {
            "HOME"
        };
        let only_other = Env::from_vars([(other, "/elsewhere")]);
        assert_eq!(only_other.home(), None, "{other} is not read here");
    }
}
