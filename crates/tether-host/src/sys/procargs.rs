//! The layout of macOS's `KERN_PROCARGS2` answer, read without the system: a pure parser,
//! so it is tested on every OS ([`super::libproc`] uses it on macOS).
//!
//! The layout (xnu, `bsd/kern/kern_sysctl.c`, `sysctl_procargsx`): `argc` as a native-endian
//! 32-bit integer; the executable's path, NUL-terminated; NUL padding; `argc` arguments,
//! each NUL-terminated; then the environment's `KEY=VALUE` strings, each NUL-terminated,
//! up to an empty string or the end of the buffer (the kernel may cut the area short).

/// The environment part of a `KERN_PROCARGS2` buffer, as `KEY=VALUE` entries each followed
/// by one NUL (the shape of Linux's `/proc/<pid>/environ`). `None` when the buffer is too
/// short for its own `argc` or holds fewer arguments than `argc` says.
#[must_use]
pub fn environment(buf: &[u8]) -> Option<Vec<u8>> {
    let argc = i32::from_ne_bytes(buf.get(..4)?.try_into().ok()?);
    let argc = usize::try_from(argc).ok()?;
    let mut rest = &buf[4..];
    // The executable's path, then the padding NULs before argv[0].
    let path_end = rest.iter().position(|b| *b == 0)?;
    rest = &rest[path_end..];
    let args_start = rest.iter().position(|b| *b != 0).unwrap_or(rest.len());
    rest = &rest[args_start..];
    for _ in 0..argc {
        let end = rest.iter().position(|b| *b == 0)?;
        rest = &rest[end + 1..];
    }
    let mut env = Vec::new();
    for entry in rest.split(|b| *b == 0) {
        if entry.is_empty() {
            break;
        }
        env.extend_from_slice(entry);
        env.push(0);
    }
    Some(env)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn procargs(argc: i32, path: &str, padding: usize, args: &[&str], env: &[&str]) -> Vec<u8> {
        let mut buf = argc.to_ne_bytes().to_vec();
        buf.extend_from_slice(path.as_bytes());
        buf.extend(std::iter::repeat_n(0, 1 + padding));
        for s in args.iter().chain(env) {
            buf.extend_from_slice(s.as_bytes());
            buf.push(0);
        }
        buf
    }

    /// A case: its name, the buffer, the environment expected.
    type Case = (&'static str, Vec<u8>, Option<&'static [u8]>);

    #[test]
    fn layouts() {
        let cases: &[Case] = &[
            (
                "two arguments, padding, two variables, an empty string after them",
                {
                    let mut b = procargs(2, "/usr/bin/node", 3, &["node", "a b"], &["A=1", "B="]);
                    b.extend_from_slice(b"\0\0stack garbage\0");
                    b
                },
                Some(b"A=1\0B=\0"),
            ),
            (
                "no padding, environment cut by the end of the buffer",
                procargs(1, "/bin/sh", 0, &["sh"], &["TETHER_AGENT_RUN=x"]),
                Some(b"TETHER_AGENT_RUN=x\0"),
            ),
            (
                "no environment at all",
                procargs(1, "/bin/sh", 0, &["sh"], &[]),
                Some(b""),
            ),
            (
                "an argument that looks like a variable is not one",
                procargs(1, "/bin/env", 0, &["X=1"], &["Y=2"]),
                Some(b"Y=2\0"),
            ),
            (
                "fewer arguments than argc",
                procargs(3, "/bin/sh", 0, &["sh"], &[]),
                None,
            ),
            ("shorter than argc", vec![1, 0], None),
            (
                "a negative argc",
                procargs(-1, "/bin/sh", 0, &[], &[]),
                None,
            ),
        ];
        for (name, buf, want) in cases {
            assert_eq!(environment(buf).as_deref(), *want, "{name}");
        }
    }
}
