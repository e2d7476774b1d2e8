//! Scoring the classifier on a corpus: per-kind precision and recall and the confusion
//! matrix, for any JSONL corpus of `{"input": <observation>, "expect": <kind or [kinds]>}`
//! lines (`tether classify --corpus FILE`, and the captured-corpus test).
//!
//! # Corpus lines
//! One JSON object per line; blank lines are skipped. `input` is an observation in the form
//! [`crate::classify::observation_from_value`] reads. `expect` is a kind name (`"rateLimited"`)
//! or a non-empty array of acceptable kind names. Optional: `id` (a string naming the case in
//! reports) and `utcOffsetMinutes` (the user's zone for wall-clock reset times). Other fields
//! are ignored.
//!
//! # Counting
//! A case is correct when its classified kind is one of its expected kinds. Its *expected*
//! kind, for the matrix and recall, is then the classified kind; for a miss it is the first
//! expected kind. Per kind: precision = correct cases classified as the kind / all cases
//! classified as it; recall = correct cases expected as it / all cases expected as it.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::classify::{ClassifyContext, classify, observation_from_value};
use crate::observation::ErrorKind;

/// Why a corpus line could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct CorpusError {
    /// The 1-based line number.
    pub line: usize,
    /// What is wrong with it.
    pub message: String,
}

/// One scored case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScoredCase {
    /// The 1-based line number.
    pub line: usize,
    /// The line's `id`, when it has one.
    pub id: Option<String>,
    /// The acceptable kinds.
    pub expect: Vec<ErrorKind>,
    /// The kind the classifier gave.
    pub got: ErrorKind,
}

impl ScoredCase {
    /// Whether the classified kind is acceptable.
    pub fn correct(&self) -> bool {
        self.expect.contains(&self.got)
    }

    /// The kind counted as expected: the classified one when correct, else the first
    /// expected kind.
    pub fn expected(&self) -> ErrorKind {
        if self.correct() {
            self.got
        } else {
            self.expect[0]
        }
    }
}

/// The precision and recall of one kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KindScore {
    /// The kind.
    pub kind: ErrorKind,
    /// Cases expected as this kind.
    pub expected: usize,
    /// Cases classified as this kind.
    pub classified: usize,
    /// Cases expected and classified as this kind.
    pub correct: usize,
}

impl KindScore {
    /// `correct / classified`, or `None` when nothing was classified as the kind.
    pub fn precision(&self) -> Option<f64> {
        (self.classified > 0).then(|| self.correct as f64 / self.classified as f64)
    }

    /// `correct / expected`, or `None` when no case expects the kind.
    pub fn recall(&self) -> Option<f64> {
        (self.expected > 0).then(|| self.correct as f64 / self.expected as f64)
    }
}

/// A scored corpus.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Score {
    /// Every case, in file order.
    pub cases: Vec<ScoredCase>,
}

fn rank(kind: ErrorKind) -> usize {
    ErrorKind::ALL
        .iter()
        .position(|k| *k == kind)
        .unwrap_or(usize::MAX)
}

fn parse_kind(value: &Value) -> Result<ErrorKind, String> {
    let name = value
        .as_str()
        .ok_or_else(|| format!("\"expect\" holds {value}, not a kind name"))?;
    serde_json::from_value(Value::String(name.to_owned())).map_err(|_| {
        format!(
            "\"expect\" names an unknown kind {name:?} (kinds: {})",
            ErrorKind::ALL.map(ErrorKind::as_str).join(", ")
        )
    })
}

impl Score {
    /// Reads and classifies a whole corpus. `ctx` is the clock and zone for every line
    /// (a line's `utcOffsetMinutes` overrides the offset).
    ///
    /// # Errors
    /// The first line that is not JSON, has no object `input`, holds an invalid
    /// observation, or has a missing, empty or unknown `expect`.
    pub fn of_corpus(text: &str, ctx: &ClassifyContext) -> Result<Score, CorpusError> {
        let mut cases = Vec::new();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let fail = |message: String| CorpusError {
                line: n + 1,
                message,
            };
            let entry: Value =
                serde_json::from_str(line).map_err(|e| fail(format!("not a JSON object: {e}")))?;
            let input = entry
                .get("input")
                .filter(|v| v.is_object())
                .cloned()
                .ok_or_else(|| fail("no \"input\" object (the observation)".into()))?;
            let observation = observation_from_value(input).map_err(|e| fail(e.to_string()))?;
            let expect = match entry.get("expect") {
                Some(Value::Array(items)) if !items.is_empty() => items
                    .iter()
                    .map(parse_kind)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(fail)?,
                Some(v @ Value::String(_)) => vec![parse_kind(v).map_err(fail)?],
                Some(other) => {
                    return Err(fail(format!(
                        "\"expect\" must be a kind name or a non-empty array of them, got {other}"
                    )));
                }
                None => return Err(fail("no \"expect\" (a kind name or an array)".into())),
            };
            let mut line_ctx = ctx.clone();
            if let Some(offset) = entry.get("utcOffsetMinutes").and_then(Value::as_i64) {
                line_ctx.utc_offset_minutes = i32::try_from(offset).unwrap_or(0);
            }
            let got = classify(&observation, &line_ctx).error.kind;
            cases.push(ScoredCase {
                line: n + 1,
                id: entry.get("id").and_then(Value::as_str).map(str::to_owned),
                expect,
                got,
            });
        }
        Ok(Score { cases })
    }

    /// Cases classified as expected.
    pub fn correct(&self) -> usize {
        self.cases.iter().filter(|c| c.correct()).count()
    }

    /// Per-kind counts for every kind that is expected or classified, in
    /// [`ErrorKind::ALL`] order.
    pub fn per_kind(&self) -> Vec<KindScore> {
        ErrorKind::ALL
            .iter()
            .map(|&kind| KindScore {
                kind,
                expected: self.cases.iter().filter(|c| c.expected() == kind).count(),
                classified: self.cases.iter().filter(|c| c.got == kind).count(),
                correct: self
                    .cases
                    .iter()
                    .filter(|c| c.correct() && c.got == kind)
                    .count(),
            })
            .filter(|s| s.expected > 0 || s.classified > 0)
            .collect()
    }

    /// (expected, classified) → count.
    pub fn confusion(&self) -> BTreeMap<(usize, usize), usize> {
        let mut m = BTreeMap::new();
        for c in &self.cases {
            *m.entry((rank(c.expected()), rank(c.got))).or_insert(0) += 1;
        }
        m
    }

    /// The report `tether classify --corpus` prints: the total, a per-kind table (expected,
    /// classified, correct, precision, recall in percent with one decimal, `-` when
    /// undefined), the confusion matrix (rows expected, columns classified as) and the
    /// misclassified cases.
    pub fn render(&self) -> String {
        let total = self.cases.len();
        let correct = self.correct();
        let pct = |x: Option<f64>| x.map_or("-".to_owned(), |v| format!("{:.1}%", v * 100.0));
        let mut out = format!(
            "{total} cases, {correct} classified as expected ({})\n\n",
            pct((total > 0).then(|| correct as f64 / total as f64))
        );
        let kinds = self.per_kind();
        let width = kinds
            .iter()
            .map(|k| k.kind.as_str().len())
            .max()
            .unwrap_or(4)
            .max("expected \\ got".len());
        out.push_str(&format!(
            "{:<width$}  {:>8}  {:>10}  {:>7}  {:>9}  {:>6}\n",
            "kind", "expected", "classified", "correct", "precision", "recall"
        ));
        for k in &kinds {
            out.push_str(&format!(
                "{:<width$}  {:>8}  {:>10}  {:>7}  {:>9}  {:>6}\n",
                k.kind.as_str(),
                k.expected,
                k.classified,
                k.correct,
                pct(k.precision()),
                pct(k.recall())
            ));
        }
        out.push_str("\nconfusion matrix (rows: expected, columns: classified as)\n");
        let confusion = self.confusion();
        let cols: Vec<ErrorKind> = kinds.iter().map(|k| k.kind).collect();
        out.push_str(&format!("{:<width$}", "expected \\ got"));
        for c in &cols {
            out.push_str(&format!("  {:>w$}", c.as_str(), w = c.as_str().len()));
        }
        out.push('\n');
        for r in kinds.iter().filter(|k| k.expected > 0) {
            out.push_str(&format!("{:<width$}", r.kind.as_str()));
            for c in &cols {
                let n = confusion
                    .get(&(rank(r.kind), rank(*c)))
                    .copied()
                    .unwrap_or(0);
                out.push_str(&format!("  {:>w$}", n, w = c.as_str().len()));
            }
            out.push('\n');
        }
        let misses: Vec<&ScoredCase> = self.cases.iter().filter(|c| !c.correct()).collect();
        if !misses.is_empty() {
            out.push_str("\nmisclassified\n");
            for m in misses {
                let expect: Vec<&str> = m.expect.iter().map(|k| k.as_str()).collect();
                out.push_str(&format!(
                    "line {}{}: expected {}, got {}\n",
                    m.line,
                    m.id.as_deref()
                        .map_or(String::new(), |id| format!(" ({id})")),
                    expect.join(" or "),
                    m.got.as_str()
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CORPUS: &str = r#"{"id":"a","input":{"source":"http","status":429},"expect":"rateLimited"}
{"id":"b","input":{"source":"http","status":401},"expect":["authentication"]}

{"id":"c","input":{"source":"http","status":503},"expect":["network","serverError"]}
{"id":"d","input":{"source":"http","status":429},"expect":"quotaExceeded"}
"#;

    #[test]
    fn scores_precision_recall_and_confusion() {
        let score = Score::of_corpus(CORPUS, &ClassifyContext::default()).unwrap();
        assert_eq!((score.cases.len(), score.correct()), (4, 3));
        assert_eq!(score.cases[2].line, 4, "blank lines count in line numbers");
        let rate = score
            .per_kind()
            .into_iter()
            .find(|k| k.kind == ErrorKind::RateLimited)
            .unwrap();
        // Two cases classified rateLimited, one of them expected quotaExceeded.
        assert_eq!((rate.expected, rate.classified, rate.correct), (1, 2, 1));
        assert_eq!(rate.precision(), Some(0.5));
        assert_eq!(rate.recall(), Some(1.0));
        let quota = score
            .per_kind()
            .into_iter()
            .find(|k| k.kind == ErrorKind::QuotaExceeded)
            .unwrap();
        assert_eq!((quota.precision(), quota.recall()), (None, Some(0.0)));
        let m = score.confusion();
        assert_eq!(
            m[&(rank(ErrorKind::QuotaExceeded), rank(ErrorKind::RateLimited))],
            1
        );
        let text = score.render();
        assert!(
            text.starts_with("4 cases, 3 classified as expected (75.0%)"),
            "{text}"
        );
        assert!(
            text.contains("line 5 (d): expected quotaExceeded, got rateLimited"),
            "{text}"
        );
    }

    #[test]
    fn bad_lines_are_named() {
        let ctx = ClassifyContext::default();
        for (text, line, fragment) in [
            (
                "{\"input\":{\"source\":\"http\",\"status\":429},\"expect\":\"x\"}",
                1,
                "unknown kind \"x\"",
            ),
            ("\nnot json", 2, "not a JSON object"),
            ("{\"expect\":\"network\"}", 1, "no \"input\""),
            (
                "{\"input\":{\"source\":\"http\",\"status\":429}}",
                1,
                "no \"expect\"",
            ),
            (
                "{\"input\":{\"source\":\"http\",\"status\":429},\"expect\":[]}",
                1,
                "non-empty array",
            ),
            (
                "{\"input\":{\"source\":\"pigeon\"},\"expect\":\"network\"}",
                1,
                "unknown source",
            ),
        ] {
            let e = Score::of_corpus(text, &ctx).unwrap_err();
            assert_eq!(e.line, line, "{text}");
            assert!(e.message.contains(fragment), "{text}: {e}");
        }
    }
}
