//! HyperLogLog commands: PFADD, PFCOUNT, PFMERGE, PFDEBUG and PFSELFTEST.
//!
//! Owns: turning RESP arguments into `KvOps` calls for the `hyperloglog` group and their
//! replies (PFCOUNT as a signed integer, as Redis sends it). Never: hold semantics of its
//! own (hotset-kv's `pf.rs` and `hll.rs` do), or decide anything by a command's name.

use super::args::{CmdError, CmdResult};
use crate::resp::reply::Reply;
use hotset_core::kv::{KvOps, PfDebug, PfDebugAnswer, hll_self_test};

pub fn pfadd<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    r.int(i64::from(kv.pfadd(a[1], &a[2..])?));
    Ok(())
}

pub fn pfcount<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    // Redis answers the estimate as a signed number (a damaged value can make it wrap).
    r.int(kv.pfcount(&a[1..])? as i64);
    Ok(())
}

pub fn pfmerge<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    kv.pfmerge(a[1], &a[2..])?;
    r.ok();
    Ok(())
}

/// PFDEBUG GETREG|DECODE|ENCODING|TODENSE key.
pub fn pfdebug<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let sub = String::from_utf8_lossy(a[1]).to_string();
    let what = match sub.to_ascii_uppercase().as_str() {
        "GETREG" => PfDebug::GetReg,
        "DECODE" => PfDebug::Decode,
        "ENCODING" => PfDebug::Encoding,
        "TODENSE" => PfDebug::ToDense,
        _ => return Err(CmdError(format!("ERR Unknown PFDEBUG subcommand '{sub}'"))),
    };
    if a.len() != 3 {
        return Err(CmdError(format!("ERR Wrong number of arguments for the '{sub}' subcommand")));
    }
    match kv.pfdebug(a[2], what)? {
        PfDebugAnswer::Registers(registers) => {
            r.array(registers.len());
            registers.iter().for_each(|&register| r.int(i64::from(register)));
        }
        PfDebugAnswer::Text(text) if what == PfDebug::Encoding => r.simple(&text),
        PfDebugAnswer::Text(text) => r.bulk(text.as_bytes()),
        PfDebugAnswer::Converted(converted) => r.int(i64::from(converted)),
    }
    Ok(())
}

/// PFSELFTEST: the HyperLogLog implementation's own consistency checks.
pub fn pfselftest<K: KvOps>(_: &K, _: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    hll_self_test().map_err(|failure| CmdError(format!("ERR {failure}")))?;
    r.ok();
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_self_test_passes() {
        assert_eq!(hotset_core::kv::hll_self_test(), Ok(()));
    }
}
