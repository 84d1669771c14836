//! Argument parsing shared by the command groups, with Redis' exact error texts.
//!
//! Owns: `CmdError` (the `-ERR ...` line a failed command answers) and the parsers for
//! integers, floats and option words. Never: write a reply; a command writes its reply
//! only once it has succeeded, so an error never follows half a reply.

use hotset_core::kv::KvError;

/// A failed command's error line, without the leading `-`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CmdError(pub String);

impl From<KvError> for CmdError {
    fn from(error: KvError) -> Self {
        CmdError(error.to_string())
    }
}

pub type CmdResult = Result<(), CmdError>;

pub fn syntax() -> CmdError {
    CmdError("ERR syntax error".into())
}

/// Redis' text for a wrong number of arguments to command `name`.
pub fn wrong_arity(name: &str) -> CmdError {
    CmdError(format!("ERR wrong number of arguments for '{}' command", name.to_ascii_lowercase()))
}

/// Redis' text for a subcommand `command` does not have.
pub fn unknown_subcommand(command: &str, sub: &[u8]) -> CmdError {
    CmdError(format!(
        "ERR unknown subcommand '{}'. Try {command} HELP.",
        String::from_utf8_lossy(&sub[..sub.len().min(128)])
    ))
}

/// A HELP subcommand's reply: its lines as status replies.
pub fn help(r: &mut crate::resp::reply::Reply<'_>, lines: &[&str]) {
    r.array(lines.len());
    lines.iter().for_each(|line| r.simple(line));
}

pub fn not_integer() -> CmdError {
    CmdError("ERR value is not an integer or out of range".into())
}

/// A signed 64-bit integer written the way Redis accepts it (no spaces, no `+`, no
/// leading zeros other than `0` itself).
pub fn int(arg: &[u8]) -> Result<i64, CmdError> {
    let text = std::str::from_utf8(arg).map_err(|_| not_integer())?;
    let digits = text.strip_prefix('-').unwrap_or(text);
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && !(digits.len() > 1 && digits.starts_with('0'))
        && text != "-0";
    if !canonical {
        return Err(not_integer());
    }
    text.parse().map_err(|_| not_integer())
}

/// A non-negative integer that fits in `usize` (counts, cursors are parsed separately).
pub fn count(arg: &[u8]) -> Result<usize, CmdError> {
    usize::try_from(int(arg)?).map_err(|_| not_integer())
}

/// An increment for INCRBYFLOAT and HINCRBYFLOAT: a float, `inf` and `-inf` included
/// (the engine then refuses the result as Redis does: "increment would produce NaN or
/// Infinity"); NaN refused here.
pub fn float_increment(arg: &[u8]) -> Result<f64, CmdError> {
    let error = || CmdError("ERR value is not a valid float".into());
    let text = std::str::from_utf8(arg).map_err(|_| error())?;
    if text.is_empty() || text.trim() != text {
        return Err(error());
    }
    let value: f64 = text.parse().map_err(|_| error())?;
    if value.is_nan() { Err(error()) } else { Ok(value) }
}

/// Whether `arg` is the option word `word` (ASCII case-insensitive).
pub fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

/// A field and its value, or a key and its value.
pub type Pair<'a> = (&'a [u8], &'a [u8]);

/// `items` taken two by two (MSET's keys and values, HSET's fields and values); an odd
/// count is the command's arity error.
pub fn pairs<'a>(name: &str, items: &[&'a [u8]]) -> Result<Vec<Pair<'a>>, CmdError> {
    if !items.len().is_multiple_of(2) {
        return Err(wrong_arity(name));
    }
    Ok(items.chunks_exact(2).map(|pair| (pair[0], pair[1])).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_are_canonical() {
        assert_eq!(int(b"-42"), Ok(-42));
        assert_eq!(int(b"9223372036854775807"), Ok(i64::MAX));
        for bad in [&b""[..], b"+1", b" 1", b"01", b"-0", b"1.0", b"9223372036854775808", b"abc", b"-"] {
            assert_eq!(int(bad), Err(not_integer()), "{}", String::from_utf8_lossy(bad));
        }
        assert!(count(b"-1").is_err());
        assert_eq!(float_increment(b"1.5e3"), Ok(1500.0));
        assert!(float_increment(b" 1").is_err());
        assert_eq!(float_increment(b"+inf"), Ok(f64::INFINITY));
        assert!(float_increment(b"nan").is_err() && float_increment(b"").is_err());
    }
}
