//! The command-line client of a running server: `hotset sql`, `hotset status`, and the
//! connection `hotset import` and `hotset export` pipeline over.
//!
//! Owns: the CLI's use of `hotset-client` (the one RESP client of Hotset's tools): its
//! errors as the text the CLI prints, and where the user sets a time limit named in a
//! timeout's message. Never: retry, or hide a server error (it is printed and the process
//! exits with 1).

pub use hotset_client::Reply;
use std::time::Duration;

/// Named in a time limit's message: where the user sets it.
const TIMEOUT_HINT: &str = " (--timeout, HOTSET_TIMEOUT)";

/// Where a running server listens and how long to wait for it.
pub struct Target<'a> {
    pub addr: &'a str,
    pub password: Option<&'a str>,
    /// The longest wait to connect, and for each read or write to make progress (for a
    /// reply: until its next byte); `None` waits for ever.
    pub timeout: Option<Duration>,
}

impl Target<'_> {
    fn client(&self) -> hotset_client::Target<'_> {
        hotset_client::Target {
            addr: self.addr,
            password: self.password,
            timeout: self.timeout,
            timeout_hint: TIMEOUT_HINT,
        }
    }
}

/// Connects to the target, authenticates if asked, runs one command and returns its reply;
/// a server error comes back as `Err` with its text.
pub fn call(target: &Target<'_>, args: &[&str]) -> Result<Reply, String> {
    let mut client = Client::connect(target)?;
    client.send(&args.iter().map(|a| a.as_bytes()).collect::<Vec<_>>());
    client.flush()?;
    client.read()
}

/// One connection that pipelines: `send` queues commands, `flush` writes them all, and
/// `read` takes their replies in order; errors as the text the CLI prints.
pub struct Client(hotset_client::Connection);

impl Client {
    pub fn connect(target: &Target<'_>) -> Result<Client, String> {
        hotset_client::Connection::connect(&target.client()).map(Client).map_err(|e| e.to_string())
    }

    /// Queues one command (not written until `flush`).
    pub fn send(&mut self, args: &[&[u8]]) {
        self.0.send(args);
    }

    pub fn flush(&mut self) -> Result<(), String> {
        self.0.flush().map_err(|e| e.to_string())
    }

    /// The next reply; a server error as `Err` with its text.
    pub fn read(&mut self) -> Result<Reply, String> {
        self.0.read().map_err(|e| e.to_string())
    }
}
