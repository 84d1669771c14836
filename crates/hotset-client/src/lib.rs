//! The one client of a Hotset server's Redis protocol that Hotset's own tools use: the
//! command-line client (`hotset sql`, `status`, `import`, `export`) and the Python
//! package's `hotset.connect`.
//!
//! Owns: [`Connection`] (one blocking RESP2 connection: connect within a time limit, AUTH,
//! pipelined `send`/`flush`/`read`, every read and write under the same limit),
//! [`Reply`] and how it is read, [`CallError`], and [`Pool`] (a `hotset://` address, and
//! idle connections reused by calls from many threads). Never: retry a command (a write
//! that may have reached the server must not be sent twice), or read a server's error
//! words for meaning (callers branch on the code word that leads them).
//!
//! The tests of the server keep an independent client (the `redis` crate, redis-py,
//! redis-cli): a test that spoke to the server only through this crate could not catch a
//! mistake the two share.

mod connection;
mod pool;
mod reply;

pub use connection::{CallError, Connection, Target};
pub use pool::{DEFAULT_PORT, Pool};
pub use reply::Reply;
