//! The libraries Redis embeds beside Lua's own: `cjson`, `cmsgpack`, `struct` and `bit`,
//! written in Rust.
//!
//! Owns the table of parts each library hands the sandbox (its Rust functions, wrapped by the
//! prelude so their errors are raised as Lua errors, and its constants). This module must
//! never keep state between calls except what a library documents (`cjson`'s settings).

use mlua::{Lua, Table};

/// Every library's parts, by global name.
pub(crate) fn library_parts(lua: &Lua) -> mlua::Result<Table> {
    let parts = lua.create_table()?;
    for name in ["cjson", "cmsgpack", "struct", "bit"] {
        parts.raw_set(name, lua.create_table()?)?;
    }
    Ok(parts)
}
