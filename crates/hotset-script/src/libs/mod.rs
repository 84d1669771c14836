//! The libraries Redis embeds beside Lua's own: `cjson`, `cmsgpack`, `struct` and `bit`,
//! written in Rust.
//!
//! Owns the table of parts each library hands the sandbox (its Rust functions and constants;
//! their errors are raised through the sandbox's `raise` so scripts catch plain strings). This
//! module must never keep state between calls except what a library documents (`cjson`'s
//! settings).

use mlua::{Lua, Table};

pub(crate) mod bit;
pub(crate) mod cjson;
pub(crate) mod cmsgpack;
pub(crate) mod structs;

/// Every library's parts, by global name.
pub(crate) fn library_parts(lua: &Lua) -> mlua::Result<Table> {
    let parts = lua.create_table()?;
    parts.raw_set("cjson", cjson::parts(lua)?)?;
    parts.raw_set("cmsgpack", cmsgpack::parts(lua)?)?;
    parts.raw_set("struct", structs::parts(lua)?)?;
    parts.raw_set("bit", bit::parts(lua)?)?;
    Ok(parts)
}
