//! The `hotset` binary: `hotset serve` runs the server (RESP and HTTP listeners over one
//! data folder); `hotset sql`, `hotset status`, `hotset import` and `hotset export` talk
//! to a running one.
//!
//! Owns: the command line (clap), how flags and environment variables override the TOML
//! config file, and logging setup. Never: serve requests itself (`server` does).

#![forbid(unsafe_code)]

/// glibc malloc spends much of a bulk load (recovery) in cross-arena frees; mimalloc
/// does not, and serves the many small per-request allocations faster. Its count of the
/// bytes it holds is what `maxmemory` judges (`used_memory`).
#[global_allocator]
static ALLOCATOR: hotset_alloc::CountingMimalloc = hotset_alloc::CountingMimalloc;

mod auth;
mod blocking;
mod client;
mod commands;
mod config;
mod freshness;
mod gate;
mod hooks;
mod http;
mod memory;
mod metrics;
mod notify;
mod params;
mod pubsub;
mod resp;
mod scripting;
mod server;
mod state;
mod tls;
mod tracking;
mod transfer;
mod watch;

use clap::{Args, Parser, Subcommand};
use config::Config;
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "hotset", version, about = "Hotset: an in-memory document database with Redis, HTTP/JSON and SQL")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs the server until SIGINT or SIGTERM.
    Serve(ServeArgs),
    /// Runs one SQL statement on a running server and prints its JSON answer.
    Sql {
        /// The SQL text.
        text: String,
        #[command(flatten)]
        server: ServerAddr,
    },
    /// Prints a running server's state (INFO: server, clients, memory, persistence, keyspaces).
    Status {
        #[command(flatten)]
        server: ServerAddr,
    },
    /// Prints the live-sync sources of a running server: a line each with its state,
    /// position applied, lag and transactions (INFO sources).
    Sources {
        #[command(flatten)]
        server: ServerAddr,
    },
    /// Upserts every document of a JSON Lines file (or of a file holding one JSON array)
    /// into a namespace of a running server, in batches of 1,000 (each all or nothing),
    /// with a progress bar.
    Import {
        /// The file: JSON Lines (one document a line; blank lines are skipped), or one JSON
        /// array of documents (when its first non-blank character is `[`).
        file: PathBuf,
        /// The namespace.
        #[arg(long)]
        ns: String,
        /// Create the namespace if it is missing, with a hash primary key on this field.
        #[arg(long, value_name = "FIELD")]
        create_pk: Option<String>,
        #[command(flatten)]
        server: ServerAddr,
    },
    /// Writes every document of a namespace of a running server as JSON Lines.
    Export {
        /// The namespace.
        #[arg(long)]
        ns: String,
        /// The file to write [default: standard output].
        #[arg(long, short)]
        out: Option<PathBuf>,
        #[command(flatten)]
        server: ServerAddr,
    },
}

/// Where a running server listens.
#[derive(Args)]
struct ServerAddr {
    /// The server's Redis protocol address.
    #[arg(long, env = "HOTSET_ADDR", default_value = "127.0.0.1:7379")]
    addr: String,
    /// Its password, if it has one.
    #[arg(long, env = "HOTSET_PASSWORD")]
    password: Option<String>,
    /// Seconds to wait for the connection and for each reply (0: no limit) [default: 10
    /// for status, 30 for sql (longer than the server's own query limit), 60 per reply for
    /// import and export].
    #[arg(long, env = "HOTSET_TIMEOUT", value_name = "SECONDS", value_parser = parse_timeout)]
    timeout: Option<Timeout>,
}

/// A `--timeout`: `None` inside is no limit.
#[derive(Clone, Copy)]
struct Timeout(Option<std::time::Duration>);

fn parse_timeout(text: &str) -> Result<Timeout, String> {
    let seconds: f64 = text.parse().map_err(|_| format!("'{text}' is not a number of seconds"))?;
    if !(0.0..=1e9).contains(&seconds) {
        return Err(format!("{seconds} seconds is out of range (0 to 1e9; 0: no limit)"));
    }
    Ok(Timeout((seconds > 0.0).then(|| std::time::Duration::from_secs_f64(seconds))))
}

impl ServerAddr {
    /// The server to talk to, with this command's default timeout unless one was given.
    fn target(&self, default_seconds: u64) -> client::Target<'_> {
        let timeout = match self.timeout {
            Some(Timeout(given)) => given,
            None => Some(std::time::Duration::from_secs(default_seconds)),
        };
        client::Target { addr: &self.addr, password: self.password.as_deref(), timeout }
    }
}

/// Default `--timeout` of each client subcommand, in seconds.
const STATUS_TIMEOUT_SECONDS: u64 = 10;
const SQL_TIMEOUT_SECONDS: u64 = 30;
const TRANSFER_TIMEOUT_SECONDS: u64 = 60;

/// Each flag overrides the config file; each has an environment variable too.
#[derive(Args)]
struct ServeArgs {
    /// TOML config file (every key optional; see README).
    #[arg(long, env = "HOTSET_CONFIG")]
    config: Option<PathBuf>,
    /// Data folder [default: hotset-data].
    #[arg(long, env = "HOTSET_DATA")]
    data: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1].
    #[arg(long, env = "HOTSET_BIND")]
    bind: Option<String>,
    /// Redis protocol port, or `off` [default: 7379].
    #[arg(long, env = "HOTSET_RESP_PORT")]
    resp_port: Option<config::Port>,
    /// HTTP/JSON port, or `off` [default: 7380].
    #[arg(long, env = "HOTSET_HTTP_PORT")]
    http_port: Option<config::Port>,
    /// Redis protocol over TLS port [default: off].
    #[arg(long, env = "HOTSET_TLS_PORT")]
    tls_port: Option<config::Port>,
    /// HTTPS port [default: off].
    #[arg(long, env = "HOTSET_HTTP_TLS_PORT")]
    http_tls_port: Option<config::Port>,
    /// The TLS ports' certificate chain (PEM).
    #[arg(long, env = "HOTSET_TLS_CERT_FILE")]
    tls_cert_file: Option<PathBuf>,
    /// The TLS ports' private key (PEM: PKCS#8, RSA or SEC1).
    #[arg(long, env = "HOTSET_TLS_KEY_FILE")]
    tls_key_file: Option<PathBuf>,
    /// CA certificates (PEM); when set, TLS clients must present a certificate they signed.
    #[arg(long, env = "HOTSET_TLS_CA_FILE")]
    tls_ca_file: Option<PathBuf>,
    /// When writes are fsynced before they are acknowledged [default: periodic].
    #[arg(long, env = "HOTSET_FSYNC", value_parser = ["always", "periodic", "never"])]
    fsync: Option<String>,
    /// What start-up does with a damaged log record [default: strict].
    #[arg(long, env = "HOTSET_RECOVERY", value_parser = ["strict", "truncate-corrupt"])]
    recovery: Option<String>,
    /// Password clients must AUTH with.
    #[arg(long, env = "HOTSET_PASSWORD")]
    password: Option<String>,
    /// Threads serving connections (0: one per core).
    #[arg(long, env = "HOTSET_THREADS")]
    threads: Option<usize>,
    /// Most connections at once.
    #[arg(long, env = "HOTSET_MAX_CLIENTS")]
    max_clients: Option<usize>,
    /// Largest RESP bulk string, in bytes.
    #[arg(long, env = "HOTSET_MAX_BULK_BYTES")]
    max_bulk_bytes: Option<usize>,
    /// Largest document stored (minified JSON), in bytes [default: 16777216].
    #[arg(long, env = "HOTSET_MAX_DOCUMENT_BYTES")]
    max_document_bytes: Option<usize>,
    /// Longest a query may run, in milliseconds (0: no limit) [default: 10000].
    #[arg(long, env = "HOTSET_QUERY_TIMEOUT_MS")]
    query_timeout_ms: Option<u64>,
}

impl ServeArgs {
    fn config(self) -> Result<Config, String> {
        let mut config = match &self.config {
            Some(path) => Config::from_file(path)?,
            None => Config::default(),
        };
        macro_rules! set {
            ($($flag:ident => $($field:ident).+),* $(,)?) => {
                $(if let Some(value) = self.$flag { config.$($field).+ = value.into(); })*
            };
        }
        set!(
            data => data, bind => bind, resp_port => resp_port, http_port => http_port,
            fsync => fsync, recovery => recovery, threads => threads,
            max_clients => limits.max_clients, max_bulk_bytes => limits.max_bulk_bytes,
            query_timeout_ms => limits.query_timeout_ms, max_document_bytes => limits.max_document_bytes,
            tls_port => tls_port, http_tls_port => http_tls_port,
            tls_cert_file => tls.cert_file, tls_key_file => tls.key_file, tls_ca_file => tls.ca_file,
        );
        if self.password.is_some() {
            config.password = self.password;
        }
        config.validate()?;
        Ok(config)
    }
}

/// `hotset export`: to a file written whole under a temporary name, then renamed, so a
/// failed export never leaves a partial file under the name asked for.
/// To standard output, a reader that goes away (`hotset export | head`) ends the export
/// quietly with success, as it does for other Unix tools.
fn export(ns: &str, out: Option<&std::path::Path>, server: &ServerAddr) -> Result<(), String> {
    let mut client = client::Client::connect(&server.target(TRANSFER_TIMEOUT_SECONDS))?;
    let count = match out.filter(|path| path.as_os_str() != "-") {
        None => match transfer::export(&mut client, ns, &mut std::io::BufWriter::new(std::io::stdout().lock()))? {
            transfer::Exported::All(count) => count,
            transfer::Exported::OutputClosed => return Ok(()),
        },
        Some(path) => {
            let partial = path.with_extension("partial");
            let file = std::fs::File::create(&partial).map_err(|e| format!("{}: {e}", partial.display()))?;
            let count = match transfer::export(&mut client, ns, &mut std::io::BufWriter::new(file)) {
                Ok(transfer::Exported::All(count)) => Ok(count),
                Ok(transfer::Exported::OutputClosed) => Err(format!("{}: the output was closed", partial.display())),
                Err(error) => Err(error),
            };
            let count = count.and_then(|count| {
                std::fs::rename(&partial, path).map_err(|e| format!("{}: {e}", path.display())).map(|()| count)
            });
            if count.is_err() {
                let _ = std::fs::remove_file(&partial);
            }
            count?
        }
    };
    eprintln!("hotset: exported {count} documents from '{ns}'");
    Ok(())
}

/// Prints a reply on standard output; a reader that went away is no error.
fn print_reply(text: &str) -> Result<(), String> {
    use std::io::Write;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("writing: {error}")),
        _ => Ok(()),
    }
}

/// Logs on standard error, in colour only on a terminal and when `NO_COLOR` is not set
/// (<https://no-color.org>), so a log redirected to a file holds no escape codes.
fn init_logging() {
    use std::io::IsTerminal;
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|value| !value.is_empty());
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("HOTSET_LOG").unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal() && !no_color)
        .init();
}

fn main() {
    init_logging();
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Serve(args) => args.config().and_then(server::serve),
        Command::Sql { text, server } => client::call(&server.target(SQL_TIMEOUT_SECONDS), &["DOC.SQL", &text])
            .and_then(|reply| print_reply(&format!("{reply}\n"))),
        Command::Status { server } => client::call(&server.target(STATUS_TIMEOUT_SECONDS), &["INFO"])
            .and_then(|reply| print_reply(&reply.to_string())),
        Command::Sources { server } => client::call(&server.target(STATUS_TIMEOUT_SECONDS), &["INFO", "sources"])
            .and_then(|reply| print_reply(&reply.to_string())),
        Command::Import { file, ns, create_pk, server } => {
            let job = transfer::Import { file: &file, namespace: &ns, create_pk: create_pk.as_deref() };
            client::Client::connect(&server.target(TRANSFER_TIMEOUT_SECONDS))
                .and_then(|mut client| transfer::import(&mut client, &job))
                .map(|count| eprintln!("hotset: imported {count} documents into '{ns}'"))
        }
        Command::Export { ns, out, server } => export(&ns, out.as_deref(), &server),
    };
    if let Err(error) = outcome {
        eprintln!("hotset: {error}");
        std::process::exit(1);
    }
}
