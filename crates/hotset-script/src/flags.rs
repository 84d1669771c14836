//! Script flags and the shebang line that declares them.
//!
//! Owns [`ScriptFlags`] (`no-writes`, `allow-oom`, `allow-stale`, `no-cluster`,
//! `allow-cross-slot-keys`), reading an EVAL script's `#!lua flags=...` line and a library's
//! `#!lua name=...` line, with Redis 7.0's error texts. This module must never run code: it
//! only reads the first line.

/// The flags a script or function declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct ScriptFlags(u8);

impl ScriptFlags {
    /// `no-writes`: the script only reads; write commands are refused, and it may run on a
    /// read-only replica and under OOM.
    pub const NO_WRITES: ScriptFlags = ScriptFlags(1);
    /// `allow-oom`: the script may run when used memory is over `maxmemory`.
    pub const ALLOW_OOM: ScriptFlags = ScriptFlags(2);
    /// `allow-stale`: the script may run on a stale replica.
    pub const ALLOW_STALE: ScriptFlags = ScriptFlags(4);
    /// `no-cluster`: the script refuses to run in cluster mode.
    pub const NO_CLUSTER: ScriptFlags = ScriptFlags(8);
    /// `allow-cross-slot-keys`: the script may touch keys of several slots.
    pub const ALLOW_CROSS_SLOT_KEYS: ScriptFlags = ScriptFlags(16);

    /// Every flag with its name, in Redis' order (FUNCTION LIST lists them so).
    pub const NAMED: [(ScriptFlags, &'static str); 5] = [
        (ScriptFlags::NO_WRITES, "no-writes"),
        (ScriptFlags::ALLOW_OOM, "allow-oom"),
        (ScriptFlags::ALLOW_STALE, "allow-stale"),
        (ScriptFlags::NO_CLUSTER, "no-cluster"),
        (ScriptFlags::ALLOW_CROSS_SLOT_KEYS, "allow-cross-slot-keys"),
    ];

    /// No flag.
    pub const fn empty() -> ScriptFlags {
        ScriptFlags(0)
    }

    /// Whether every flag of `other` is set here.
    pub const fn contains(self, other: ScriptFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Both sets of flags.
    pub const fn union(self, other: ScriptFlags) -> ScriptFlags {
        ScriptFlags(self.0 | other.0)
    }

    /// The flag called `name`; `case_sensitive` as EVAL shebangs are, not as
    /// `redis.register_function` is.
    pub fn from_name(name: &[u8], case_sensitive: bool) -> Option<ScriptFlags> {
        ScriptFlags::NAMED.iter().find_map(|&(flag, flag_name)| {
            let same = if case_sensitive {
                name == flag_name.as_bytes()
            } else {
                name.eq_ignore_ascii_case(flag_name.as_bytes())
            };
            same.then_some(flag)
        })
    }

    /// The names of the flags set, in Redis' order.
    pub fn names(self) -> Vec<&'static str> {
        ScriptFlags::NAMED.iter().filter(|(flag, _)| self.contains(*flag)).map(|&(_, name)| name).collect()
    }

    /// The raw bits (stable: they are stored in dumps).
    pub const fn bits(self) -> u8 {
        self.0
    }

    /// Flags from raw bits; `None` if an unknown bit is set.
    pub const fn from_bits(bits: u8) -> Option<ScriptFlags> {
        if bits & !0x1f == 0 { Some(ScriptFlags(bits)) } else { None }
    }
}

/// An EVAL script's shebang: what it declared and how long the line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EvalShebang {
    /// `None` without a shebang: Redis' compatibility mode.
    pub flags: Option<ScriptFlags>,
    /// Bytes of the shebang line before its LF (0 without one). The body compiled is what
    /// follows, from the LF on, so line numbers stay the author's.
    pub line_bytes: usize,
}

/// Reads an EVAL script's `#!lua [flags=a,b]` line. Errors are Redis' texts (without `ERR`).
pub fn parse_eval_shebang(body: &[u8]) -> Result<EvalShebang, String> {
    if !body.starts_with(b"#!") {
        return Ok(EvalShebang { flags: None, line_bytes: 0 });
    }
    let Some(line_bytes) = body.iter().position(|&byte| byte == b'\n') else {
        return Err("Invalid script shebang".to_string());
    };
    let Some(parts) = split_args(&body[..line_bytes]).filter(|parts| !parts.is_empty()) else {
        return Err("Invalid engine in script shebang".to_string());
    };
    if parts[0] != b"#!lua" {
        return Err(format!("Unexpected engine in script shebang: {}", String::from_utf8_lossy(&parts[0])));
    }
    let mut flags = ScriptFlags::empty();
    for part in &parts[1..] {
        let Some(list) = part.strip_prefix(b"flags=") else {
            return Err(format!("Unknown lua shebang option: {}", String::from_utf8_lossy(part)));
        };
        // Redis splits on every comma, so `flags=` alone names one empty (unknown) flag...
        // except that its splitter returns no element for an empty string.
        if list.is_empty() {
            continue;
        }
        for name in list.split(|&byte| byte == b',') {
            let flag = ScriptFlags::from_name(name, true)
                .ok_or_else(|| format!("Unexpected flag in script shebang: {}", String::from_utf8_lossy(name)))?;
            flags = flags.union(flag);
        }
    }
    Ok(EvalShebang { flags: Some(flags), line_bytes })
}

/// A library's `#!<engine> name=<name>` line and the code after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LibraryShebang {
    /// The engine named after `#!` (Redis matches it without regard to case).
    pub engine: Vec<u8>,
    /// The library's name, not yet checked for its characters.
    pub name: Vec<u8>,
    /// Bytes of the shebang line before its LF; the code compiled starts at its LF.
    pub line_bytes: usize,
}

/// Reads a library's metadata line. Errors are Redis' texts (without `ERR`).
pub fn parse_library_shebang(code: &[u8]) -> Result<LibraryShebang, String> {
    if !code.starts_with(b"#!") {
        return Err("Missing library metadata".to_string());
    }
    let Some(line_bytes) = code.iter().position(|&byte| byte == b'\n') else {
        return Err("Invalid library metadata".to_string());
    };
    let Some(parts) = split_args(&code[..line_bytes]).filter(|parts| !parts.is_empty()) else {
        return Err("Invalid library metadata".to_string());
    };
    let engine = parts[0][2..].to_vec();
    let mut name = None;
    for part in &parts[1..] {
        if part.len() >= 5 && part[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err("Invalid metadata value, name argument was given multiple times".to_string());
            }
            name = Some(part[5..].to_vec());
            continue;
        }
        return Err(format!("Invalid metadata value given: {}", String::from_utf8_lossy(part)));
    }
    let name = name.ok_or_else(|| "Library name was not given".to_string())?;
    Ok(LibraryShebang { engine, name, line_bytes })
}

/// Whether `name` is a valid library or function name: letters, digits and `_`, at least one.
pub fn is_valid_name(name: &[u8]) -> bool {
    !name.is_empty() && name.iter().all(|&byte| byte.is_ascii_alphanumeric() || byte == b'_')
}

/// Splits a line into arguments as Redis' `sdssplitargs` does: spaces separate, double quotes
/// take `\n \r \t \b \a \\ \" \xHH` escapes, single quotes take `\'`, and a closing quote must
/// be followed by a space or the end. `None` when quotes are unbalanced.
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut args = Vec::new();
    let mut index = 0;
    loop {
        while index < line.len() && line[index].is_ascii_whitespace() {
            index += 1;
        }
        if index >= line.len() {
            return Some(args);
        }
        let mut current = Vec::new();
        let mut in_double = false;
        let mut in_single = false;
        loop {
            let byte = line.get(index).copied();
            if in_double {
                match byte {
                    None => return None,
                    Some(b'\\')
                        if index + 3 < line.len()
                            && line[index + 1] == b'x'
                            && is_hex_pair(&line[index + 2..index + 4]) =>
                    {
                        current.push(hex_value(line[index + 2]) * 16 + hex_value(line[index + 3]));
                        index += 3;
                    }
                    Some(b'\\') if index + 1 < line.len() => {
                        index += 1;
                        current.push(match line[index] {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            b'b' => 8,
                            b'a' => 7,
                            other => other,
                        });
                    }
                    Some(b'"') => {
                        if index + 1 < line.len() && !line[index + 1].is_ascii_whitespace() {
                            return None;
                        }
                        index += 1;
                        break;
                    }
                    Some(other) => current.push(other),
                }
            } else if in_single {
                match byte {
                    None => return None,
                    Some(b'\\') if index + 1 < line.len() && line[index + 1] == b'\'' => {
                        index += 1;
                        current.push(b'\'');
                    }
                    Some(b'\'') => {
                        if index + 1 < line.len() && !line[index + 1].is_ascii_whitespace() {
                            return None;
                        }
                        index += 1;
                        break;
                    }
                    Some(other) => current.push(other),
                }
            } else {
                match byte {
                    None => break,
                    Some(b' ' | b'\n' | b'\r' | b'\t' | 0) => break,
                    Some(b'"') => in_double = true,
                    Some(b'\'') => in_single = true,
                    Some(other) => current.push(other),
                }
            }
            index += 1;
        }
        args.push(current);
    }
}

fn is_hex_pair(pair: &[u8]) -> bool {
    pair.iter().all(u8::is_ascii_hexdigit)
}

fn hex_value(digit: u8) -> u8 {
    match digit {
        b'0'..=b'9' => digit - b'0',
        b'a'..=b'f' => digit - b'a' + 10,
        _ => digit - b'A' + 10,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eval_shebang_flags_and_errors() {
        assert_eq!(parse_eval_shebang(b"return 1"), Ok(EvalShebang { flags: None, line_bytes: 0 }));
        let shebang = parse_eval_shebang(b"#!lua flags=no-writes,allow-oom\nreturn 1").unwrap();
        assert_eq!(shebang.flags, Some(ScriptFlags::NO_WRITES.union(ScriptFlags::ALLOW_OOM)));
        assert_eq!(shebang.line_bytes, 31);
        assert_eq!(parse_eval_shebang(b"#!lua\nreturn 1").unwrap().flags, Some(ScriptFlags::empty()));
        assert_eq!(parse_eval_shebang(b"#!lua flags=\nreturn 1").unwrap().flags, Some(ScriptFlags::empty()));
        assert_eq!(parse_eval_shebang(b"#!lua"), Err("Invalid script shebang".into()));
        assert_eq!(parse_eval_shebang(b"#!js\n"), Err("Unexpected engine in script shebang: #!js".into()));
        assert_eq!(parse_eval_shebang(b"#!lua foo=bar\n"), Err("Unknown lua shebang option: foo=bar".into()));
        assert_eq!(
            parse_eval_shebang(b"#!lua flags=NO-WRITES\n"),
            Err("Unexpected flag in script shebang: NO-WRITES".into())
        );
        assert_eq!(parse_eval_shebang(b"#!\"lua\n"), Err("Invalid engine in script shebang".into()));
    }

    #[test]
    fn library_shebang_metadata_and_errors() {
        let shebang = parse_library_shebang(b"#!lua name=mylib\ncode").unwrap();
        assert_eq!(
            (shebang.engine.as_slice(), shebang.name.as_slice(), shebang.line_bytes),
            (&b"lua"[..], &b"mylib"[..], 16)
        );
        assert_eq!(parse_library_shebang(b"#!LUA NAME=x\n").unwrap().name, b"x");
        assert_eq!(parse_library_shebang(b"return 1"), Err("Missing library metadata".into()));
        assert_eq!(parse_library_shebang(b"#!lua name=x"), Err("Invalid library metadata".into()));
        assert_eq!(parse_library_shebang(b"#!lua\n"), Err("Library name was not given".into()));
        assert_eq!(parse_library_shebang(b"#!lua name=a foo=b\n"), Err("Invalid metadata value given: foo=b".into()));
        assert_eq!(
            parse_library_shebang(b"#!lua name=a name=b\n"),
            Err("Invalid metadata value, name argument was given multiple times".into())
        );
        assert!(is_valid_name(b"lib_1") && !is_valid_name(b"a-b") && !is_valid_name(b""));
    }

    #[test]
    fn split_args_follows_redis_quoting() {
        assert_eq!(
            split_args(b"  a \"b c\" 'd\\'e' \"\\x41\\n\""),
            Some(vec![b"a".to_vec(), b"b c".to_vec(), b"d'e".to_vec(), b"A\n".to_vec()])
        );
        assert_eq!(split_args(b"\"open"), None);
        assert_eq!(split_args(b"\"a\"b"), None);
        assert_eq!(split_args(b""), Some(vec![]));
    }

    #[test]
    fn flag_names_in_redis_order() {
        let all = ScriptFlags::NAMED.iter().fold(ScriptFlags::empty(), |flags, &(flag, _)| flags.union(flag));
        assert_eq!(all.names(), vec!["no-writes", "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys"]);
        assert_eq!(ScriptFlags::from_name(b"No-Writes", false), Some(ScriptFlags::NO_WRITES));
        assert_eq!(ScriptFlags::from_name(b"No-Writes", true), None);
        assert_eq!(ScriptFlags::from_bits(all.bits()), Some(all));
        assert_eq!(ScriptFlags::from_bits(0x20), None);
    }
}
