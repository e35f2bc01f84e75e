//! `resumable`: the command line of the resumable lifecycle kernel.
//!
//! Each command lives in its own module with an `Args` struct (clap derive) and a `run`
//! function returning the exit status; adding a command is a module, a variant and an arm.
//! Exit status 2 means misuse or malformed input, for every command (clap's own errors too).

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod replay;

/// Checkpoint, suspend and resume of agent runs: the lifecycle kernel on the command line.
#[derive(Parser)]
#[command(name = "resumable", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario (JSON lines) through the kernel and print the trace.
    Replay(replay::Args),
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Replay(args) => replay::run(&args),
    }
}
