//! Request frames of the Redis protocol: multibulk arrays (`*2\r\n$3\r\nGET\r\n$1\r\nk\r\n`)
//! and inline commands (`PING\r\n`, what telnet and `redis-cli` in inline mode send).
//!
//! Owns: splitting a read buffer into requests whose arguments borrow from the buffer,
//! and the protocol errors Redis clients know (`Protocol error: ...`). Never: copy an
//! argument (but for an inline line with quoted arguments, which people type and clients
//! never send: those come back unescaped, owned), allocate per request beyond the
//! argument list it is handed, or accept a frame
//! over the configured limits (a huge declared length is refused before any byte of it is
//! buffered).

/// Limits on one request.
#[derive(Debug, Clone, Copy)]
pub struct FrameLimits {
    /// Largest bulk string (Redis `proto-max-bulk-len`).
    pub bulk_bytes_max: usize,
    /// Most arguments in one request.
    pub args_max: usize,
    /// Longest inline command line.
    pub inline_bytes_max: usize,
}

impl Default for FrameLimits {
    fn default() -> Self {
        FrameLimits { bulk_bytes_max: 512 << 20, args_max: 1 << 20, inline_bytes_max: 64 << 10 }
    }
}

/// What `parse` found at the start of a buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// A whole request of this many bytes; its arguments were pushed (none for an empty
    /// inline line, which Redis ignores).
    Request(usize),
    /// A whole inline request of this many bytes whose quoted arguments were unescaped
    /// (`SET "a b" 'c'`): its arguments, owned.
    Quoted(usize, Vec<Vec<u8>>),
    /// More bytes are needed.
    Incomplete,
    /// The bytes are not a request: the client gets `-ERR Protocol error: {0}` and the
    /// connection is closed, as Redis does (its framing cannot be trusted any more).
    Invalid(String),
}

/// Parses one request from the start of `buf`, pushing its arguments onto `args`
/// (cleared first).
pub fn parse<'a>(buf: &'a [u8], args: &mut Vec<&'a [u8]>, limits: &FrameLimits) -> Parsed {
    args.clear();
    match buf.first() {
        None => Parsed::Incomplete,
        Some(b'*') => parse_multibulk(buf, args, limits),
        Some(_) => parse_inline(buf, args, limits),
    }
}

fn parse_multibulk<'a>(buf: &'a [u8], args: &mut Vec<&'a [u8]>, limits: &FrameLimits) -> Parsed {
    let Some((count, mut at)) = line(buf, 1) else {
        return header_incomplete(buf, "multibulk length");
    };
    let count = match parse_len(count) {
        Some(n) if n <= limits.args_max as i64 => n,
        _ => return Parsed::Invalid("invalid multibulk length".into()),
    };
    if count <= 0 {
        // `*0` and `*-1` are empty requests; Redis skips them.
        return Parsed::Request(at);
    }
    for _ in 0..count {
        match buf.get(at) {
            None => return Parsed::Incomplete,
            Some(b'$') => {}
            Some(&other) => return Parsed::Invalid(format!("expected '$', got '{}'", other as char)),
        }
        let Some((len, start)) = line(buf, at + 1) else {
            return header_incomplete(&buf[at..], "bulk length");
        };
        let len = match parse_len(len) {
            Some(n) if n >= 0 && n as usize <= limits.bulk_bytes_max => n as usize,
            _ => return Parsed::Invalid("invalid bulk length".into()),
        };
        let end = start + len;
        if buf.len() < end + 2 {
            return Parsed::Incomplete;
        }
        if &buf[end..end + 2] != b"\r\n" {
            return Parsed::Invalid("expected CRLF after a bulk string".into());
        }
        args.push(&buf[start..end]);
        at = end + 2;
    }
    Parsed::Request(at)
}

/// An inline command: arguments split on spaces and tabs, with Redis' quoting rules for
/// `"..."` (backslash escapes) and `'...'`.
fn parse_inline<'a>(buf: &'a [u8], args: &mut Vec<&'a [u8]>, limits: &FrameLimits) -> Parsed {
    let Some(newline) = buf.iter().position(|&b| b == b'\n') else {
        return if buf.len() > limits.inline_bytes_max {
            Parsed::Invalid("too big inline request".into())
        } else {
            Parsed::Incomplete
        };
    };
    if newline > limits.inline_bytes_max {
        return Parsed::Invalid("too big inline request".into());
    }
    let line = &buf[..newline];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.contains(&b'"') || line.contains(&b'\'') {
        return match split_quoted(line) {
            Some(owned) if owned.len() > limits.args_max => Parsed::Invalid("too many inline arguments".into()),
            Some(owned) => Parsed::Quoted(newline + 1, owned),
            None => Parsed::Invalid("unbalanced quotes in request".into()),
        };
    }
    let mut at = 0;
    while at < line.len() {
        match line[at] {
            b' ' | b'\t' => at += 1,
            _ => {
                let end = line[at..].iter().position(|&b| b == b' ' || b == b'\t').map_or(line.len(), |n| at + n);
                args.push(&line[at..end]);
                at = end;
            }
        }
        if args.len() > limits.args_max {
            return Parsed::Invalid("too many inline arguments".into());
        }
    }
    Parsed::Request(newline + 1)
}

/// Splits an inline line with Redis' quoting rules: `"..."` with backslash escapes
/// (`\n \r \t \b \a \\ \"` and `\xHH`), `'...'` with `\'` only; a closing quote must
/// end the argument. `None` when quotes do not balance.
fn split_quoted(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut args = Vec::new();
    let mut at = 0;
    let blank = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c);
    loop {
        while at < line.len() && blank(line[at]) {
            at += 1;
        }
        if at == line.len() {
            return Some(args);
        }
        let mut arg = Vec::new();
        let (mut double, mut single) = (false, false);
        loop {
            let c = line.get(at).copied();
            if double {
                match c? {
                    b'\\'
                        if at + 3 < line.len()
                            && line[at + 1] == b'x'
                            && hex(line[at + 2]).is_some()
                            && hex(line[at + 3]).is_some() =>
                    {
                        arg.push(hex(line[at + 2])? * 16 + hex(line[at + 3])?);
                        at += 3;
                    }
                    b'\\' if at + 1 < line.len() => {
                        at += 1;
                        arg.push(match line[at] {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            b'b' => 0x08,
                            b'a' => 0x07,
                            other => other,
                        });
                    }
                    b'"' => {
                        // The closing quote must be followed by a blank or the end.
                        if line.get(at + 1).is_some_and(|&b| !blank(b)) {
                            return None;
                        }
                        at += 1;
                        break;
                    }
                    other => arg.push(other),
                }
            } else if single {
                match c? {
                    b'\\' if line.get(at + 1) == Some(&b'\'') => {
                        at += 1;
                        arg.push(b'\'');
                    }
                    b'\'' => {
                        if line.get(at + 1).is_some_and(|&b| !blank(b)) {
                            return None;
                        }
                        at += 1;
                        break;
                    }
                    other => arg.push(other),
                }
            } else {
                match c {
                    None => break,
                    Some(b) if blank(b) => break,
                    Some(b'"') => double = true,
                    Some(b'\'') => single = true,
                    Some(other) => arg.push(other),
                }
            }
            at += 1;
        }
        args.push(arg);
    }
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// The line starting at `from` (up to `\r\n`) and the position after it.
fn line(buf: &[u8], from: usize) -> Option<(&[u8], usize)> {
    let rest = buf.get(from..)?;
    let cr = rest.iter().take(HEADER_BYTES_MAX + 1).position(|&b| b == b'\r')?;
    if rest.get(cr + 1) != Some(&b'\n') {
        return None;
    }
    Some((&rest[..cr], from + cr + 2))
}

/// Longest valid length line after its `*` or `$`: 20 digits and a sign.
const HEADER_BYTES_MAX: usize = 22;

/// A length line (starting at `buf[0]`, the `*` or `$`) without its CRLF yet: wait for
/// more, unless it is already longer than any valid one or has a CR without LF.
fn header_incomplete(buf: &[u8], what: &str) -> Parsed {
    let header = &buf[1..buf.len().min(HEADER_BYTES_MAX + 2)];
    let bad_cr = header.windows(2).any(|w| w[0] == b'\r' && w[1] != b'\n');
    if bad_cr || buf.len() > HEADER_BYTES_MAX + 2 {
        return Parsed::Invalid(format!("invalid {what}"));
    }
    Parsed::Incomplete
}

/// A decimal length as Redis writes it: optional `-`, digits, no sign `+`, no spaces.
fn parse_len(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    if digits.is_empty() || digits.len() > 18 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let value = digits.iter().fold(0i64, |n, &d| n * 10 + i64::from(d - b'0'));
    Some(if negative { -value } else { value })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(buf: &[u8]) -> (Parsed, Vec<Vec<u8>>) {
        let mut args = Vec::new();
        let parsed = parse(buf, &mut args, &FrameLimits::default());
        (parsed, args.iter().map(|a| a.to_vec()).collect())
    }

    #[test]
    fn multibulk_requests_split_at_their_end() {
        let buf = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nPING\r\n";
        let (parsed, args) = one(buf);
        assert_eq!(parsed, Parsed::Request(20));
        assert_eq!(args, vec![b"GET".to_vec(), b"k".to_vec()]);
        assert_eq!(one(&buf[20..]), (Parsed::Request(14), vec![b"PING".to_vec()]));
        // Binary-safe: CRLF inside a bulk string is data.
        assert_eq!(one(b"*1\r\n$4\r\na\r\nb\r\n").1, vec![b"a\r\nb".to_vec()]);
    }

    #[test]
    fn every_prefix_of_a_request_is_incomplete() {
        let buf = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\n0123456789\r\n";
        for end in 0..buf.len() {
            assert_eq!(one(&buf[..end]).0, Parsed::Incomplete, "prefix of {end} bytes");
        }
        assert_eq!(one(buf).0, Parsed::Request(buf.len()));
    }

    #[test]
    fn malformed_frames_are_protocol_errors() {
        for bad in [&b"*1\r\n+PING\r\n"[..], b"*x\r\n", b"*1\r\n$-5\r\n", b"*1\r\n$abc\r\n", b"*1\r\n$1\r\nab\r\n"] {
            assert!(matches!(one(bad).0, Parsed::Invalid(_)), "{}", String::from_utf8_lossy(bad));
        }
        // A declared length over the limit is refused before its bytes arrive.
        let limits = FrameLimits { bulk_bytes_max: 100, ..FrameLimits::default() };
        let mut args = Vec::new();
        assert_eq!(parse(b"*1\r\n$101\r\n", &mut args, &limits), Parsed::Invalid("invalid bulk length".into()));
        assert_eq!(parse(b"*1\r\n$100\r\n", &mut args, &limits), Parsed::Incomplete);
        assert!(matches!(one(b"*99999999999999999999\r\n").0, Parsed::Invalid(_)));
        // A length line that never ends is refused once longer than any valid one.
        assert!(matches!(one(&[b'*'; 40]).0, Parsed::Invalid(_)));
    }

    #[test]
    fn inline_commands_split_on_blanks() {
        assert_eq!(one(b"SET  k\tv\r\n"), (Parsed::Request(10), vec![b"SET".to_vec(), b"k".to_vec(), b"v".to_vec()]));
        assert_eq!(one(b"PING\n"), (Parsed::Request(5), vec![b"PING".to_vec()]));
        assert_eq!(one(b"\r\n"), (Parsed::Request(2), vec![]));
        assert_eq!(one(b"PIN").0, Parsed::Incomplete);
        let quoted = |line: &[u8]| {
            let mut args = Vec::new();
            parse(line, &mut args, &FrameLimits::default())
        };
        let owned = |items: &[&[u8]]| items.iter().map(|i| i.to_vec()).collect::<Vec<_>>();
        assert_eq!(quoted(b"SET \"a b\" c\r\n"), Parsed::Quoted(13, owned(&[b"SET", b"a b", b"c"])));
        assert_eq!(
            quoted(b"set 'it\\'s' \"\\x41\\n\\\"\" \"\"\n"),
            Parsed::Quoted(26, owned(&[b"set", b"it's", b"A\n\"", b""]))
        );
        for bad in [&b"set \"\"\"k\"\"\" v\r\n"[..], b"set \"open\r\n", b"set 'a'b\r\n"] {
            assert_eq!(quoted(bad), Parsed::Invalid("unbalanced quotes in request".into()));
        }
        let limits = FrameLimits { inline_bytes_max: 8, ..FrameLimits::default() };
        let mut args = Vec::new();
        assert!(matches!(parse(b"0123456789", &mut args, &limits), Parsed::Invalid(_)));
    }
}
