//! The server's RESP request parser on arbitrary bytes, as a client's socket delivers
//! them: requests one after another in one buffer.
//!
//! Checks: no panic; a request's length stays inside the buffer and its arguments inside
//! the request; re-encoding the arguments as a multibulk frame parses back to the same
//! arguments and consumes exactly that frame; every strict prefix of a multibulk request
//! is `Incomplete` (a reader that waits for more bytes never acts on half a request);
//! whatever tight limits accept, the default limits accept the same way.
//!
//! `hotset-server` is a binary crate, so its parser (which needs nothing but `std`) is
//! compiled into this target from its own file.

#[allow(dead_code)]
#[path = "../../../hotset-server/src/resp/parse.rs"]
mod parse;

use parse::{FrameLimits, Parsed, parse};

/// Limits small enough that inputs of a few hundred bytes cross each of them.
const TIGHT: FrameLimits = FrameLimits { bulk_bytes_max: 64, args_max: 8, inline_bytes_max: 128 };

/// Longest request whose every prefix is parsed again (quadratic work).
const PREFIX_CHECK_BYTES_MAX: usize = 512;

/// One input of the target.
pub fn run(data: &[u8]) {
    let defaults = FrameLimits::default();
    let mut at = 0;
    // Each request moves `at` forward by at least one byte, so this ends.
    while at < data.len() {
        let buf = &data[at..];
        let mut args = Vec::new();
        let parsed = parse(buf, &mut args, &defaults);
        let mut tight_args = Vec::new();
        let tight = parse(buf, &mut tight_args, &TIGHT);
        if let Parsed::Request(used) = tight {
            assert_eq!(parsed, Parsed::Request(used), "tight limits accepted what the defaults did not");
            assert_eq!(tight_args, args, "tight limits split the request otherwise");
        }
        let Parsed::Request(used) = parsed else { break };
        check_request(buf, used, &args, &defaults);
        at += used;
    }
}

fn check_request(buf: &[u8], used: usize, args: &[&[u8]], limits: &FrameLimits) {
    assert!(used > 0 && used <= buf.len(), "request of {used} bytes in a buffer of {}", buf.len());
    let request = &buf[..used];
    for arg in args {
        let start = arg.as_ptr() as usize - request.as_ptr() as usize;
        assert!(start + arg.len() <= used, "an argument lies outside its request");
    }
    // The request alone parses the same way: nothing after it was looked at.
    let mut again = Vec::new();
    assert_eq!(parse(request, &mut again, limits), Parsed::Request(used));
    assert_eq!(again, args);
    if buf[0] == b'*' && used <= PREFIX_CHECK_BYTES_MAX {
        for cut in 0..used {
            let mut partial = Vec::new();
            assert_eq!(parse(&request[..cut], &mut partial, limits), Parsed::Incomplete, "prefix of {cut} bytes");
        }
    }
    let encoded = encode_multibulk(args);
    let mut decoded = Vec::new();
    assert_eq!(parse(&encoded, &mut decoded, limits), Parsed::Request(encoded.len()), "re-encoded request");
    assert_eq!(decoded, args, "re-encoded request parses to other arguments");
}

/// `*<count>\r\n` then `$<len>\r\n<bytes>\r\n` per argument, as every client writes (the
/// seeds are written this way too).
pub fn encode_multibulk(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}
