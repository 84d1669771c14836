//! The `hotset` binary: `hotset serve` runs the server (RESP and HTTP listeners over one
//! data folder); `hotset sql`, `hotset status`, `hotset import` and `hotset export` talk
//! to a running one.
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
mod transfer;

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
    /// Upserts every line of a JSON Lines file into a namespace of a running server, in
    /// batches of 1,000 (each all or nothing), with a progress bar.
    Import {
        /// The JSON Lines file (one document a line; blank lines are skipped).
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
                $(if let Some(value) = self.$flag { config.$($field).+ = value; })*
            };
        }
        set!(
            data => data, bind => bind, resp_port => resp_port, http_port => http_port,
            fsync => fsync, recovery => recovery, threads => threads,
            max_clients => limits.max_clients, max_bulk_bytes => limits.max_bulk_bytes,
            query_timeout_ms => limits.query_timeout_ms,
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
fn export(ns: &str, out: Option<&std::path::Path>, server: &ServerAddr) -> Result<(), String> {
    let mut client = client::Client::connect(&server.addr, server.password.as_deref())?;
    let count = match out.filter(|path| path.as_os_str() != "-") {
        None => transfer::export(&mut client, ns, &mut std::io::BufWriter::new(std::io::stdout().lock()))?,
        Some(path) => {
            let partial = path.with_extension("partial");
            let file = std::fs::File::create(&partial).map_err(|e| format!("{}: {e}", partial.display()))?;
            let count = transfer::export(&mut client, ns, &mut std::io::BufWriter::new(file));
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
        Command::Import { file, ns, create_pk, server } => {
            let job = transfer::Import { file: &file, namespace: &ns, create_pk: create_pk.as_deref() };
            client::Client::connect(&server.addr, server.password.as_deref())
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
