//! Tether's one secret rule set and the functions that apply it: every string the store
//! writes (R-PRIV-1), every classified error message that reaches an editor or a log
//! (R-PRIV-2) and every observation the server logs goes through [`redact_str`] or
//! [`redact_value`] here, so there is one set of rules to review and extend.
//!
//! The rules follow gitleaks' rule set (MIT, `config/gitleaks.toml`; R-PRIV-1) for the
//! credentials coding agents meet most: GitHub, OpenAI, Anthropic, AWS, Slack, PEM private
//! keys, JWTs, Google Cloud, GitLab, npm, Hugging Face and Stripe; plus the password of any
//! `scheme://user:password@host` URL, and three forms gitleaks lacks that error messages
//! carry (R-PRIV-2): Anthropic tokens other than API keys (`sk-ant-oat01-…` OAuth tokens),
//! other providers' `sk-` keys and HTTP bearer tokens.
//!
//! A match is replaced by `[REDACTED:<rule-id>]`, so a reader still sees that something was
//! there and what kind. A rule whose pattern has a group named `secret` replaces only that
//! group (a password inside a URL: `postgres://user:[REDACTED:url-password]@host/db`, so the
//! user and host stay readable). A `RegexSet` is tried first: strings that match no rule
//! (nearly all of them) cost one scan.

#![warn(missing_docs)]

use std::sync::OnceLock;

use regex::{Regex, RegexSet};
use serde_json::Value;

/// One redaction rule: a stable id (used in the replacement text, `[REDACTED:<id>]`) and its
/// pattern. The ids of gitleaks-derived rules are gitleaks' own rule ids.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// Rule id, e.g. `github-pat`.
    pub id: &'static str,
    /// The `regex` crate pattern. When it has a group named `secret`, only that group is
    /// replaced; otherwise the whole match is.
    pub pattern: &'static str,
}

/// The rules, in the order they are applied: gitleaks' (R-PRIV-1), then `url-password`, then
/// the forms error messages carry that gitleaks lacks (R-PRIV-2). Order matters where rules
/// overlap: the first rule to match a secret names it, and later rules no longer see it.
pub const RULES: &[Rule] = &[
    Rule {
        id: "private-key",
        pattern: r"(?s)-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----|\z)",
    },
    Rule {
        id: "github-fine-grained-pat",
        pattern: r"github_pat_[0-9A-Za-z_]{82}",
    },
    Rule {
        id: "github-pat",
        pattern: r"ghp_[0-9A-Za-z]{36}",
    },
    Rule {
        id: "github-oauth",
        pattern: r"gho_[0-9A-Za-z]{36}",
    },
    Rule {
        id: "github-app-token",
        pattern: r"(?:ghu|ghs)_[0-9A-Za-z]{36}",
    },
    Rule {
        id: "github-refresh-token",
        pattern: r"ghr_[0-9A-Za-z]{36}",
    },
    Rule {
        id: "anthropic-api-key",
        pattern: r"sk-ant-(?:api03|admin01)-[A-Za-z0-9_-]{93}AA",
    },
    Rule {
        id: "openai-api-key",
        pattern: r"sk-(?:(?:proj|svcacct|admin)-)?[A-Za-z0-9_-]{20,74}T3BlbkFJ[A-Za-z0-9_-]{20,74}",
    },
    Rule {
        id: "openai-project-key",
        pattern: r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}",
    },
    Rule {
        id: "aws-access-key-id",
        pattern: r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b",
    },
    Rule {
        id: "slack-token",
        pattern: r"xox[bpe](?:-[0-9]{10,13}){1,3}-[A-Za-z0-9-]{10,}",
    },
    Rule {
        id: "jwt",
        pattern: r"\bey[A-Za-z0-9]{17,}\.ey[A-Za-z0-9/\\_-]{17,}\.(?:[A-Za-z0-9/\\_-]{10,}={0,2})?",
    },
    Rule {
        id: "gcp-api-key",
        pattern: r"\bAIza[0-9A-Za-z_-]{35}\b",
    },
    Rule {
        id: "gitlab-pat",
        pattern: r"glpat-[0-9A-Za-z_-]{20}",
    },
    Rule {
        id: "npm-access-token",
        pattern: r"\bnpm_[A-Za-z0-9]{36}\b",
    },
    Rule {
        id: "huggingface-access-token",
        pattern: r"\bhf_[A-Za-z]{34}\b",
    },
    // Userinfo with a password in any URL (RFC 3986 §3.2.1 deprecates it, but database URLs,
    // git remotes and proxies still carry one): `scheme://user:password@host`. The user may
    // be empty (`redis://:password@host`); the password runs to the last `@` before the path,
    // so an unescaped `@` inside it is still covered.
    Rule {
        id: "url-password",
        pattern: r"\b[A-Za-z][A-Za-z0-9+.-]{0,31}://[^\s:/?#@\[\]]*:(?P<secret>[^\s/?#]+)@",
    },
    Rule {
        id: "stripe-access-token",
        pattern: r"\b(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,99}\b",
    },
    // Not in gitleaks; these three were the classifier's own looser pattern before the rule
    // sets became one (R-PRIV-2), kept because error messages carry them. They come after
    // the gitleaks rules, so a key those recognise keeps its precise label.
    //
    // Anything that starts `sk-ant-` is Anthropic's: OAuth access and refresh tokens
    // (`sk-ant-oat01-…`, `sk-ant-ort01-…`, what a Claude subscription login stores), and API
    // keys of another length or cut short in a message. Before `sk-api-key`, which would
    // match them too.
    Rule {
        id: "anthropic-token",
        pattern: r"\bsk-ant-[A-Za-z0-9_-]{8,}",
    },
    // `sk-` keys of OpenAI and of the providers that copy its format: OpenAI's older
    // `sk-` + 48 characters and project keys shorter than gitleaks' `openai-project-key`,
    // DeepSeek's `sk-` + 32 hex digits, OpenRouter's `sk-or-v1-` + 64. At most two short
    // segments between `sk-` and a run of 16 or more letters, digits or underscores, so a
    // kebab-case name (`sk-some-long-kebab-name`) or a word ending in `sk` (`task-…`) is not
    // a key.
    Rule {
        id: "sk-api-key",
        pattern: r"\bsk-(?:[A-Za-z0-9]{1,8}-){0,2}[A-Za-z0-9_]{16,}[A-Za-z0-9_-]*",
    },
    // An HTTP bearer token (RFC 6750 §2.1: `Authorization: Bearer <token68>`), as agents
    // quote failed requests. Only the token goes: `Bearer [REDACTED:bearer-token]`.
    Rule {
        id: "bearer-token",
        pattern: r"\b(?i:bearer)\s+(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)",
    },
];

struct Compiled {
    set: RegexSet,
    each: Vec<Regex>,
}

fn compiled() -> &'static Compiled {
    static C: OnceLock<Compiled> = OnceLock::new();
    C.get_or_init(|| {
        let patterns = RULES.iter().map(|r| r.pattern);
        // The patterns are constants covered by tests; failing to compile them is a bug.
        Compiled {
            set: RegexSet::new(patterns).expect("redaction rules compile"),
            each: RULES
                .iter()
                .map(|r| Regex::new(r.pattern).expect("redaction rule compiles"))
                .collect(),
        }
    })
}

/// Redacts `s` in place: each match of a [`RULES`] entry becomes `[REDACTED:<rule-id>]` (only
/// the rule's `secret` group, when it has one). Returns the number of secrets replaced, 0
/// when `s` is unchanged. Never fails; the first call compiles the rules (once per process).
pub fn redact_str(s: &mut String) -> usize {
    let c = compiled();
    // `is_match` stops at the first hit and needs no overlapping search: the fast path for
    // the (nearly all) strings without secrets.
    if !c.set.is_match(s) {
        return 0;
    }
    let hits = c.set.matches(s);
    let mut count = 0;
    for i in hits.iter() {
        let re = &c.each[i];
        let replacement = format!("[REDACTED:{}]", RULES[i].id);
        let mut n = 0;
        let replaced = re.replace_all(s, |caps: &regex::Captures| {
            n += 1;
            match (caps.get(0), caps.name("secret")) {
                (Some(whole), Some(secret)) => {
                    let text = whole.as_str();
                    let (start, end) =
                        (secret.start() - whole.start(), secret.end() - whole.start());
                    format!("{}{replacement}{}", &text[..start], &text[end..])
                }
                _ => replacement.clone(),
            }
        });
        if n > 0 {
            *s = replaced.into_owned();
            count += n;
        }
    }
    count
}

/// Redacts every string and every object key inside `v`, at any depth, as [`redact_str`]
/// does; numbers, booleans and nulls are left alone. Returns the number of secrets replaced.
/// Never fails.
pub fn redact_value(v: &mut Value) -> usize {
    match v {
        Value::String(s) => redact_str(s),
        Value::Array(items) => items.iter_mut().map(redact_value).sum(),
        Value::Object(map) => {
            let mut count = 0;
            let needs_key_pass = map.keys().any(|k| compiled().set.is_match(k));
            if needs_key_pass {
                let old = std::mem::take(map);
                for (mut k, val) in old {
                    count += redact_str(&mut k);
                    map.insert(k, val);
                }
            }
            count + map.values_mut().map(redact_value).sum::<usize>()
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(s: &str) -> (String, usize) {
        let mut owned = s.to_owned();
        let n = redact_str(&mut owned);
        (owned, n)
    }

    // Test vectors are assembled at run time so no literal credential sits in the source.
    fn rep(c: char, n: usize) -> String {
        std::iter::repeat_n(c, n).collect()
    }

    fn positives() -> Vec<(&'static str, String)> {
        let a36 = format!("{}{}", rep('a', 18), rep('7', 18));
        vec![
            (
                "private-key",
                format!(
                    "-----BEGIN RSA PRIVATE KEY-----\nMIIE{}\n-----END RSA PRIVATE KEY-----",
                    rep('Q', 64)
                ),
            ),
            (
                "private-key",
                format!("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl{}", rep('x', 40)),
            ),
            (
                "github-fine-grained-pat",
                format!("github_pat_{}", rep('B', 82)),
            ),
            ("github-pat", format!("ghp_{a36}")),
            ("github-oauth", format!("gho_{a36}")),
            ("github-app-token", format!("ghu_{a36}")),
            ("github-app-token", format!("ghs_{a36}")),
            ("github-refresh-token", format!("ghr_{a36}")),
            (
                "anthropic-api-key",
                format!("sk-ant-api03-{}AA", rep('x', 93)),
            ),
            (
                "openai-api-key",
                format!("sk-{}T3BlbkFJ{}", rep('a', 20), rep('b', 20)),
            ),
            (
                "openai-api-key",
                format!("sk-proj-{}T3BlbkFJ{}", rep('c', 58), rep('d', 58)),
            ),
            ("openai-project-key", format!("sk-proj-{}", rep('e', 120))),
            ("aws-access-key-id", format!("AKIA{}", rep('Z', 16))),
            ("aws-access-key-id", format!("ASIA{}", "QWERTYUIOP234567")),
            (
                "slack-token",
                format!("xoxb-{}-{}-{}", rep('1', 12), rep('2', 12), rep('a', 24)),
            ),
            (
                "slack-token",
                format!(
                    "xoxp-{}-{}-{}-{}",
                    rep('1', 11),
                    rep('2', 11),
                    rep('3', 12),
                    rep('f', 32)
                ),
            ),
            (
                "slack-token",
                format!("xoxe-{}-{}", rep('1', 13), rep('A', 30)),
            ),
            (
                "jwt",
                format!(
                    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.{}",
                    rep('s', 43)
                ),
            ),
            ("gcp-api-key", format!("AIza{}", rep('y', 35))),
            ("gitlab-pat", format!("glpat-{}", rep('g', 20))),
            ("npm-access-token", format!("npm_{}", rep('n', 36))),
            ("huggingface-access-token", format!("hf_{}", rep('h', 34))),
            ("stripe-access-token", format!("sk_live_{}", rep('4', 24))),
            ("url-password", format!("postgres://user:{}@", rep('p', 12))),
            ("anthropic-token", format!("sk-ant-oat01-{}", rep('o', 40))),
            ("anthropic-token", format!("sk-ant-api03-{}", rep('t', 20))),
            ("sk-api-key", format!("sk-{}", rep('d', 32))),
            ("sk-api-key", format!("sk-{}", rep('L', 48))),
            ("sk-api-key", format!("sk-or-v1-{}", rep('f', 64))),
            ("sk-api-key", format!("sk-proj-{}", rep('p', 36))),
            ("bearer-token", format!("Bearer {}", rep('b', 26))),
            (
                "bearer-token",
                format!("bearer {}.{}==", rep('b', 20), rep('c', 8)),
            ),
        ]
    }

    /// A bearer token goes, the scheme stays; a JWT or a known key after `Bearer` keeps its
    /// own label and is counted once.
    #[test]
    fn bearer_tokens_keep_the_scheme_and_yield_to_precise_rules() {
        let token = rep('t', 24);
        let (out, n) = r(&format!("Authorization: Bearer {token} rejected"));
        assert_eq!(
            (out.as_str(), n),
            ("Authorization: Bearer [REDACTED:bearer-token] rejected", 1)
        );
        let (out, n) = r(&format!("Authorization: Bearer ghp_{}", rep('a', 36)));
        assert_eq!(
            (out.as_str(), n),
            ("Authorization: Bearer [REDACTED:github-pat]", 1)
        );
        let (out, n) = r(&format!("key sk-ant-api03-{}AA", rep('x', 93)));
        assert_eq!((out.as_str(), n), ("key [REDACTED:anthropic-api-key]", 1));
    }

    /// What the classifier's own pattern caught before the rule sets became one (R-PRIV-2):
    /// an error message that quotes a key and a bearer token loses both.
    #[test]
    fn error_message_forms_are_caught() {
        let key = format!("sk-proj-{}0123456789", rep('k', 26));
        let bearer = rep('z', 26);
        let (out, n) = r(&format!(
            "Incorrect API key provided: {key}. Bearer {bearer}"
        ));
        assert_eq!(n, 2, "{out}");
        assert!(!out.contains(&key) && !out.contains(&bearer), "{out}");
        assert_eq!(
            out,
            "Incorrect API key provided: [REDACTED:sk-api-key]. Bearer [REDACTED:bearer-token]"
        );
    }

    /// URL credentials: only the password goes; scheme, user, host and path stay.
    #[test]
    fn url_passwords_are_redacted_keeping_user_and_host() {
        let pw = format!("pa{}ss", rep('w', 6));
        let token = format!("tok{}", rep('9', 20));
        let cases = [
            (
                format!("postgres://user:{pw}@host/db"),
                "postgres://user:[REDACTED:url-password]@host/db".to_owned(),
            ),
            (
                format!("https://user:{token}@host"),
                "https://user:[REDACTED:url-password]@host".to_owned(),
            ),
            (
                format!("DATABASE_URL=mysql://root:{pw}@127.0.0.1:3306/app?ssl=1 next"),
                "DATABASE_URL=mysql://root:[REDACTED:url-password]@127.0.0.1:3306/app?ssl=1 next"
                    .to_owned(),
            ),
            (
                format!("redis://:{pw}@cache:6379/0"),
                "redis://:[REDACTED:url-password]@cache:6379/0".to_owned(),
            ),
            (
                format!("git remote add o https://x-access-token:{token}@github.com/o/r.git"),
                "git remote add o https://x-access-token:[REDACTED:url-password]@github.com/o/r.git"
                    .to_owned(),
            ),
            // An unescaped `@` inside the password: all of it goes.
            (
                format!("amqp://guest:{pw}@x@rabbit/vhost"),
                "amqp://guest:[REDACTED:url-password]@rabbit/vhost".to_owned(),
            ),
            (
                format!("mongodb+srv://admin:{pw}@cluster0.example.net/?retryWrites=true"),
                "mongodb+srv://admin:[REDACTED:url-password]@cluster0.example.net/?retryWrites=true"
                    .to_owned(),
            ),
            // Two in one string.
            (
                format!("a=postgres://u:{pw}@h1/d b=https://v:{token}@h2"),
                "a=postgres://u:[REDACTED:url-password]@h1/d b=https://v:[REDACTED:url-password]@h2"
                    .to_owned(),
            ),
        ];
        for (input, expected) in cases {
            let (out, n) = r(&input);
            assert_eq!(out, expected, "input {input:?}");
            assert_eq!(
                n,
                expected.matches("[REDACTED:url-password]").count(),
                "{input}"
            );
        }
        let mut v =
            serde_json::json!({"env": {"DATABASE_URL": format!("postgres://user:{pw}@host/db")}});
        assert_eq!(redact_value(&mut v), 1);
        assert!(!v.to_string().contains(&pw), "{v}");
    }

    #[test]
    fn urls_without_passwords_are_left_alone() {
        for s in [
            "https://host:8443/path@v2",
            "ssh://git@github.com:22/o/r.git",
            "https://user@host/db",
            "http://[::1]:8080/x",
            "see https://example.com/a:b@c for details",
            "mailto:someone@example.com",
            "time 12:30@home",
        ] {
            let (out, n) = r(s);
            assert_eq!((out.as_str(), n), (s, 0), "false positive on {s:?}");
        }
    }

    #[test]
    fn every_rule_has_a_positive_vector() {
        for rule in RULES {
            assert!(
                positives().iter().any(|(id, _)| id == &rule.id),
                "rule {} has no test vector",
                rule.id
            );
        }
    }

    #[test]
    fn positives_are_redacted_in_context() {
        for (id, secret) in positives() {
            let text = format!("export TOKEN=\"{secret}\" # keep this line");
            let (out, n) = r(&text);
            assert!(n >= 1, "{id}: not redacted: {text}");
            assert!(!out.contains(&secret), "{id}: secret survived: {out}");
            assert!(
                out.contains(&format!("[REDACTED:{id}]")),
                "{id}: wrong label: {out}"
            );
            assert!(
                out.starts_with("export TOKEN=\""),
                "{id}: context lost: {out}"
            );
            if id != "private-key" {
                assert!(
                    out.ends_with("\" # keep this line"),
                    "{id}: context lost: {out}"
                );
            }
        }
    }

    #[test]
    fn negatives_are_left_alone() {
        let negatives = [
            "ghp_short".to_owned(),
            format!("ghp{}", rep('a', 36)), // no underscore
            "sk-not-a-key and sk_test_ alone".to_owned(),
            format!("AKIA{}", rep('z', 16)), // lowercase: not an AWS key id
            format!("XAKIA{}", rep('Z', 16)), // inside a longer word
            "xoxb-123".to_owned(),
            "eyJ.eyJ.sig".to_owned(),
            "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----".to_owned(),
            "-----BEGIN CERTIFICATE-----".to_owned(),
            format!("AIza{}", rep('y', 10)),
            "glpat-short".to_owned(),
            format!("npm_{}", rep('n', 10)),
            format!("hf_{}", rep('h', 10)),
            "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08".to_owned(),
            "https://github.com/owner/repo/pull/42".to_owned(),
            "plain prose about tokens, keys and secrets".to_owned(),
            // Not keys: words ending in `sk`, kebab-case names, bearer in prose or a template.
            "task-management-system-with-long-name".to_owned(),
            "desk-ant-colony-simulation-engine".to_owned(),
            "sk-some-long-kebab-case-name-here".to_owned(),
            "sk-ant-short".to_owned(),
            "the bearer of bad news; bearer authentication".to_owned(),
            "Authorization: Bearer ${TOKEN}".to_owned(),
        ];
        for s in negatives {
            let (out, n) = r(&s);
            assert_eq!(n, 0, "false positive on {s:?}: {out}");
            assert_eq!(out, s);
        }
    }

    #[test]
    fn counts_every_occurrence_and_walks_values() {
        let a = format!("ghp_{}", rep('q', 36));
        let b = format!("AKIA{}", rep('Q', 16));
        let mut v = serde_json::json!({
            "text": format!("{a} and {a}"),
            "nested": [{"k": b.clone()}, 7, null],
            b.clone(): "secret as a key",
        });
        assert_eq!(redact_value(&mut v), 4);
        let s = v.to_string();
        assert!(!s.contains(&a) && !s.contains(&b), "{s}");
        assert!(s.contains("[REDACTED:aws-access-key-id]"));
    }
}
