//! The host of the run in progress, reachable by the functions that need it: `redis.call`,
//! `redis.pcall`, `redis.acl_check_cmd`, `hotset.*` and the count hook's tick.
//!
//! Those functions are made once per Lua state. Making them per run, in an mlua scope that
//! borrows the host, is the safe way, but it cost about 11 µs a run here (four functions),
//! more than a small script's whole work; so a run lends its host for its length as a raw
//! pointer in the state's app data, and [`with_host`] turns it back into a reference, one at
//! a time. This is the crate's only `unsafe` code.
//!
//! Owns: [`lend`] (the loan, ended when its guard drops, however the run ends) and
//! [`with_host`]. Never: let the pointer outlive the loan, or hand out two references to the
//! host at once.

#![allow(unsafe_code)]

use std::cell::Cell;

use mlua::Lua;

use crate::host::Host;

/// The lent host, in the app data while a run lasts.
struct Lent {
    host: *mut (dyn Host + 'static),
    /// A reference made from `host` is alive (a call into the host is under way).
    in_use: Cell<bool>,
}

// SAFETY: a `Lent` is put in the app data by the thread that runs the state, used by that
// thread's calls during the run, and taken out before the run returns (`Loan`'s drop), so
// the pointer never reaches another thread while it can be used; mlua asks app data to be
// `Send` only because a state may move between runs, when no `Lent` is in it.
unsafe impl Send for Lent {}

/// A run's loan of its host: the host is reachable by [`with_host`] until this drops.
pub(crate) struct Loan<'l> {
    lua: &'l Lua,
}

impl Drop for Loan<'_> {
    fn drop(&mut self) {
        self.lua.remove_app_data::<Lent>();
    }
}

/// Lends `host` to `lua`'s functions until the returned loan drops; the borrow of `host`
/// lasts as long as the loan, so the host outlives every use.
pub(crate) fn lend<'l>(lua: &'l Lua, host: &'l mut dyn Host) -> Loan<'l> {
    let host: *mut (dyn Host + 'l) = host;
    // SAFETY: only the lifetime is erased. The pointer is turned back into a reference by
    // `with_host` alone, while the `Lent` is in the app data, and the `Loan`, which borrows
    // `host` for `'l`, takes it out when it drops.
    let host: *mut (dyn Host + 'static) = unsafe { std::mem::transmute(host) };
    lua.set_app_data(Lent { host, in_use: Cell::new(false) });
    Loan { lua }
}

/// Runs `f` with the host of the run in progress; `None` outside a run (a function kept
/// from a run and called later), or while another call into the host is under way.
pub(crate) fn with_host<R>(lua: &Lua, f: impl FnOnce(&mut dyn Host) -> R) -> Option<R> {
    let host = {
        let lent = lua.app_data_ref::<Lent>()?;
        if lent.in_use.replace(true) {
            return None;
        }
        lent.host
    };
    // SAFETY: the `Lent` was in the app data just now, so the loan has not ended and the
    // host is alive and borrowed for it (see `lend`); `in_use` makes this the only reference
    // made from the pointer until it is reset below, and the state runs on this thread.
    let result = f(unsafe { &mut *host });
    if let Some(lent) = lua.app_data_ref::<Lent>() {
        lent.in_use.set(false);
    }
    Some(result)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{CallContext, Tick};
    use crate::value::Value;
    use std::time::Duration;

    struct Counting(u32);

    impl Host for Counting {
        fn call(&mut self, _: &[&[u8]], _: &CallContext) -> Value {
            self.0 += 1;
            Value::Int(i64::from(self.0))
        }

        fn tick(&mut self, _: Duration) -> Tick {
            Tick::Continue
        }
    }

    #[test]
    fn the_host_is_reachable_for_the_loan_and_once_at_a_time() {
        let lua = Lua::new();
        let mut host = Counting(0);
        assert!(with_host(&lua, |_| ()).is_none(), "no loan yet");
        {
            let _loan = lend(&lua, &mut host);
            assert_eq!(with_host(&lua, |host| host.tick(Duration::ZERO)), Some(Tick::Continue));
            let nested = with_host(&lua, |_| with_host(&lua, |_| ()));
            assert_eq!(nested, Some(None), "a second reference is refused while one lives");
            assert!(with_host(&lua, |_| ()).is_some(), "released after the call");
        }
        assert!(with_host(&lua, |_| ()).is_none(), "the loan ended");
        assert_eq!(host.0, 0);
    }
}
