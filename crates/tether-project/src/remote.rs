//! Git remote URLs reduced to the project they name: `git@host:team/app.git`,
//! `https://host/team/app` and `ssh://git@host/team/app.git` are one project.
//!
//! Pure functions on strings. The forms are those `git clone` accepts (git-clone(1), "GIT
//! URLS"): `scheme://[user@]host[:port]/path` for `ssh`, `git`, `http`, `https`, `ftp`,
//! `ftps` (and `git+ssh`/`ssh+git`), the scp-like `[user@]host:path` (no `://`, and no `/`
//! before the first `:`), and local paths (`/srv/app.git`, `file:///srv/app.git`).
//!
//! What is kept: the host, lowercased (DNS names are case-insensitive, RFC 4343) and the path
//! without a trailing `/` or `.git`. What is dropped: the scheme (one repository is reached
//! over SSH and HTTPS alike), user names and passwords (never kept: they can be tokens, as in
//! `https://x-access-token:…@github.com/…`), the port (the same server's SSH and HTTPS ports
//! differ; two repositories of one path on one host that differ only by port are taken as
//! one: a documented limit), a query or fragment. The path's case is kept except on hosts
//! whose repository paths are case-insensitive (GitHub, GitLab.com, Bitbucket Cloud: each
//! serves `Team/App` and `team/app` as one repository).

/// Hosts that treat a repository path case-insensitively (observed on github.com,
/// gitlab.com and bitbucket.org: a path of another case redirects to the same repository).
const CASE_INSENSITIVE_HOSTS: &[&str] = &["github.com", "gitlab.com", "bitbucket.org"];

/// The canonical form of a remote URL: `host/path` for a network remote (`github.com/team/app`),
/// `file:/abs/path` for a local one. `None` for an empty or unusable URL (no host, or no
/// path). A relative local path is returned as `file:` plus the path as written, with `\`
/// turned into `/`; the caller resolves it against the repository when it matters.
#[must_use]
pub fn canonical_remote(url: &str) -> Option<String> {
    let url = url.trim();
    if url.is_empty() {
        return None;
    }
    if let Some((scheme, rest)) = url.split_once("://") {
        let scheme = scheme.to_ascii_lowercase();
        if scheme == "file" {
            return local(rest);
        }
        // authority = up to the first `/`; the path is the rest.
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let host = strip_port(host_port);
        return network(host, path);
    }
    if let Some(colon) = scp_colon(url) {
        let (user_host, path) = (&url[..colon], &url[colon + 1..]);
        let host = user_host.rsplit_once('@').map_or(user_host, |(_, h)| h);
        return network(host, path);
    }
    local(url)
}

/// Where the `:` of an scp-like `[user@]host:path` is: the first `:` outside an IPv6
/// literal's brackets with no `/` before it; `None` for a Windows drive (`C:\…`, `C:/…`),
/// which git takes as a local path, and for anything else.
fn scp_colon(url: &str) -> Option<usize> {
    let search_from = match (url.find('['), url.find(']')) {
        (Some(open), Some(close)) if open < close => close,
        _ => 0,
    };
    let colon = search_from + url[search_from..].find(':')?;
    let before = &url[..colon];
    if before.is_empty() || before.contains('/') || before.contains('\\') {
        return None;
    }
    (!(before.len() == 1 && before.as_bytes()[0].is_ascii_alphabetic())).then_some(colon)
}

/// `host` without `:port` (an IPv6 literal `[::1]:22` keeps its brackets).
fn strip_port(host_port: &str) -> &str {
    if host_port.starts_with('[') {
        return host_port
            .find(']')
            .map_or(host_port, |end| &host_port[..=end]);
    }
    host_port
        .rsplit_once(':')
        .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
        .map_or(host_port, |(host, _)| host)
}

fn network(host: &str, path: &str) -> Option<String> {
    let host = host.trim().to_ascii_lowercase();
    if host.is_empty() {
        return None;
    }
    // A query or fragment names no other repository.
    let path = path.split(['?', '#']).next().unwrap_or("");
    let mut segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if let Some(last) = segments.last_mut() {
        *last = last.strip_suffix(".git").unwrap_or(last);
        if last.is_empty() {
            segments.pop();
        }
    }
    if segments.is_empty() {
        return None;
    }
    let mut path = segments.join("/");
    if CASE_INSENSITIVE_HOSTS.contains(&host.as_str()) {
        path = path.to_lowercase();
    }
    Some(format!("{host}/{path}"))
}

fn local(path: &str) -> Option<String> {
    let path = path.replace('\\', "/");
    let trimmed = path.trim_end_matches('/');
    let trimmed = trimmed.strip_suffix("/.git").unwrap_or(trimmed);
    let trimmed = trimmed.strip_suffix(".git").unwrap_or(trimmed);
    if trimmed.is_empty() {
        return None;
    }
    Some(format!("file:{trimmed}"))
}

#[cfg(test)]
mod tests {
    use super::canonical_remote;

    #[test]
    fn one_repository_in_every_spelling_is_one_project() {
        let table = [
            ("git@github.com:team/app.git", "github.com/team/app"),
            ("https://github.com/team/app", "github.com/team/app"),
            ("https://github.com/team/app.git", "github.com/team/app"),
            ("https://github.com/team/app/", "github.com/team/app"),
            ("ssh://git@github.com/team/app.git", "github.com/team/app"),
            (
                "ssh://git@github.com:22/team/app.git",
                "github.com/team/app",
            ),
            (
                "git+ssh://git@GitHub.com/Team/App.git",
                "github.com/team/app",
            ),
            ("git://github.com/team/app.git", "github.com/team/app"),
            ("https://GITHUB.COM/Team/App", "github.com/team/app"),
            (
                "https://x-access-token:ghp_secret@github.com/team/app.git",
                "github.com/team/app",
            ),
            (
                "https://user@github.com/team/app.git?ref=x#frag",
                "github.com/team/app",
            ),
            // Path case kept where the host distinguishes it.
            (
                "git@git.example.com:Team/App.git",
                "git.example.com/Team/App",
            ),
            (
                "https://Git.Example.com:8443/Team/App",
                "git.example.com/Team/App",
            ),
            (
                "ssh://git@git.example.com:2222/Team/App.git",
                "git.example.com/Team/App",
            ),
            ("git@[::1]:team/app.git", "[::1]/team/app"),
            ("ssh://git@[::1]:2222/team/app.git", "[::1]/team/app"),
            // Local remotes.
            ("/srv/git/app.git", "file:/srv/git/app"),
            ("/srv/git/app/.git", "file:/srv/git/app"),
            ("file:///srv/git/app.git", "file:/srv/git/app"),
            (r"C:\repos\app.git", "file:C:/repos/app"),
            ("C:/repos/app", "file:C:/repos/app"),
            ("../app", "file:../app"),
        ];
        for (url, want) in table {
            assert_eq!(canonical_remote(url).as_deref(), Some(want), "{url}");
        }
    }

    #[test]
    fn credentials_never_survive() {
        for url in [
            "https://alice:hunter2@example.com/team/app.git",
            "ssh://alice:hunter2@example.com/team/app.git",
            "alice@example.com:team/app.git",
        ] {
            let c = canonical_remote(url).unwrap();
            assert!(
                !c.contains("alice") && !c.contains("hunter2"),
                "{url} -> {c}"
            );
        }
    }

    #[test]
    fn unusable_urls_name_nothing() {
        for url in [
            "",
            "  ",
            "https://",
            "https://host",
            "https://host/.git",
            "git@host:",
        ] {
            assert_eq!(canonical_remote(url), None, "{url:?}");
        }
    }
}
