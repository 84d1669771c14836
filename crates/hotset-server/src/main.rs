//! The `hotset` binary: `hotset serve` runs the server (RESP and HTTP listeners over one
//! data folder); `hotset sql` and `hotset status` talk to a running one.
//!
//! Owns: the command line (clap), how flags and environment variables override the TOML
//! config file, and logging setup. Never: serve requests itself (`server` does).

#![forbid(unsafe_code)]

/// glibc malloc spends much of a bulk load (recovery) in cross-arena frees; mimalloc
/// does not, and serves the many small per-request allocations faster.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod client;
mod commands;
mod config;
mod http;
mod metrics;
mod resp;
mod server;
mod state;

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
}

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
    /// Redis protocol port [default: 7379].
    #[arg(long, env = "HOTSET_RESP_PORT")]
    resp_port: Option<u16>,
    /// HTTP/JSON port [default: 7380].
    #[arg(long, env = "HOTSET_HTTP_PORT")]
    http_port: Option<u16>,
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
}

impl ServeArgs {
    fn config(self) -> Result<Config, String> {
        let mut config = match &self.config {
            Some(path) => Config::from_file(path)?,
            None => Config::default(),
        };
        macro_rules! set {
            ($($flag:ident => $($field:ident).+),* $(,)?) => {
                $(if let Some(value) = self.$flag { config.$($field).+ = value; })*
            };
        }
        set!(
            data => data, bind => bind, resp_port => resp_port, http_port => http_port,
            fsync => fsync, recovery => recovery, threads => threads,
            max_clients => limits.max_clients, max_bulk_bytes => limits.max_bulk_bytes,
        );
        if self.password.is_some() {
            config.password = self.password;
        }
        config.validate()?;
        Ok(config)
    }
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("HOTSET_LOG").unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Serve(args) => args.config().and_then(server::serve),
        Command::Sql { text, server } => {
            client::call(&server.addr, server.password.as_deref(), &["DOC.SQL", &text]).map(|reply| println!("{reply}"))
        }
        Command::Status { server } => {
            client::call(&server.addr, server.password.as_deref(), &["INFO"]).map(|reply| print!("{reply}"))
        }
    };
    if let Err(error) = outcome {
        eprintln!("hotset: {error}");
        std::process::exit(1);
    }
}
