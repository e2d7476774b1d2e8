//! ANSI/ECMA-48 escape stripping and buffer capping for exec output.
//!
//! A small state machine after ECMA-48 (5th ed.) §5: `ESC [` / `CSI` (U+009B) control
//! sequences run to a final byte in `0x40..=0x7E`; `ESC ]` (OSC), `ESC P` (DCS), `ESC X`
//! (SOS), `ESC ^` (PM), `ESC _` (APC) and their C1 forms are control strings ended by ST
//! (`ESC \` or U+009C) or, as xterm accepts for OSC, BEL; other escapes are `ESC`, any
//! intermediates `0x20..=0x2F`, and one final byte. C0 controls other than `\n`, `\r` and
//! `\t` are dropped, and so is DEL. An escape cut off by the end of input is dropped.

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Ground,
    Esc,
    EscIntermediate,
    Csi,
    Str,
    StrEsc,
}

/// Returns `input` without escape sequences and without C0 controls other than `\n`, `\r`,
/// `\t`. Borrowed-to-owned; linear in the input.
pub fn strip_ansi(input: &str) -> String {
    if !input
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t' && c != '\r')
    {
        return input.to_owned();
    }
    let mut out = String::with_capacity(input.len());
    let mut state = State::Ground;
    for c in input.chars() {
        state = step(state, c, &mut out);
    }
    out
}

fn step(state: State, c: char, out: &mut String) -> State {
    let u = c as u32;
    match state {
        State::Ground => match c {
            '\u{1b}' => State::Esc,
            '\u{9b}' => State::Csi,
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => State::Str,
            '\n' | '\r' | '\t' => {
                out.push(c);
                State::Ground
            }
            _ if u < 0x20 || u == 0x7f || (0x80..0xa0).contains(&u) => State::Ground,
            _ => {
                out.push(c);
                State::Ground
            }
        },
        State::Esc => match c {
            '[' => State::Csi,
            ']' | 'P' | 'X' | '^' | '_' => State::Str,
            '\u{1b}' => State::Esc,
            _ if (0x20..=0x2f).contains(&u) => State::EscIntermediate,
            // A final byte (0x30..=0x7E) ends a two-character escape; anything else aborts it.
            _ => State::Ground,
        },
        State::EscIntermediate => match c {
            _ if (0x20..=0x2f).contains(&u) => State::EscIntermediate,
            '\u{1b}' => State::Esc,
            _ => State::Ground,
        },
        State::Csi => match c {
            _ if (0x20..=0x3f).contains(&u) => State::Csi,
            '\u{1b}' => State::Esc,
            // Final byte 0x40..=0x7E ends the sequence; a stray character aborts it.
            _ => State::Ground,
        },
        State::Str => match c {
            '\u{7}' | '\u{9c}' => State::Ground,
            '\u{1b}' => State::StrEsc,
            _ => State::Str,
        },
        State::StrEsc => match c {
            '\\' => State::Ground,
            // ESC followed by anything else ends the string and starts a new escape.
            _ => step(State::Esc, c, out),
        },
    }
}

/// Keeps at most `cap` bytes of `s`: the *end* of the output (the most recent lines matter
/// on resume), cut on a UTF-8 character boundary. Returns how many bytes were dropped.
pub fn cap_tail(s: &mut String, cap: usize) -> u64 {
    if s.len() <= cap {
        return 0;
    }
    let mut start = s.len() - cap;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    s.drain(..start);
    start as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn strips_common_sequences() {
        let cases = [
            ("\u{1b}[31mred\u{1b}[0m", "red"),
            ("\u{1b}[1;38;5;208mbold\u{1b}[m done", "bold done"),
            ("a\u{1b}]0;title\u{7}b", "ab"),
            (
                "a\u{1b}]8;;https://x.example\u{1b}\\link\u{1b}]8;;\u{1b}\\b",
                "alinkb",
            ),
            ("\u{1b}(Bplain", "plain"),
            ("\u{1b}7saved\u{1b}8", "saved"),
            ("x\u{9b}2Jy", "xy"),
            (
                "progress 10%\r\u{1b}[Kprogress 20%\n",
                "progress 10%\rprogress 20%\n",
            ),
            ("bell\u{7} and \u{8}backspace", "bell and backspace"),
            ("\u{1b}P+q544e\u{1b}\\ok", "ok"),
            ("tab\there", "tab\there"),
            ("unicode é ✓ 🙂", "unicode é ✓ 🙂"),
            ("cut at end \u{1b}[3", "cut at end "),
        ];
        for (input, want) in cases {
            assert_eq!(strip_ansi(input), want, "{input:?}");
        }
    }

    #[test]
    fn cap_keeps_the_tail_on_a_char_boundary() {
        let mut s = String::from("ééééé"); // 10 bytes
        let dropped = cap_tail(&mut s, 5);
        assert_eq!(s, "éé");
        assert_eq!(dropped, 6);
        let mut short = String::from("abc");
        assert_eq!(cap_tail(&mut short, 5), 0);
        assert_eq!(short, "abc");
    }

    proptest! {
        #[test]
        fn output_has_no_escape_or_stray_control(s in any::<String>()) {
            let out = strip_ansi(&s);
            prop_assert!(!out.chars().any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t')));
        }

        #[test]
        fn plain_text_is_kept(s in "\\PC*") {
            prop_assert_eq!(strip_ansi(&s), s);
        }

        #[test]
        fn stripping_is_idempotent(s in any::<String>()) {
            let once = strip_ansi(&s);
            prop_assert_eq!(strip_ansi(&once), once.clone());
        }
    }
}
