//! `resumable`: the command line of the resumable lifecycle kernel.
//!
//! Each command lives in its own module with an `Args` struct (clap derive) and a `run`
//! function returning the exit status; adding a command is a module, a variant and an arm.
//! Exit status 2 means misuse or malformed input, for every command (clap's own errors too).

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod check;
mod explore;
mod output;
mod replay;
mod validate;

/// Checkpoint, suspend and resume of agent runs: the lifecycle kernel on the command line.
#[derive(Parser)]
#[command(name = "resumable", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Explore every interleaving of the world around runs and judge each property.
    Check(check::Args),
    /// Serve stateright's web Explorer on 127.0.0.1 to click through the state space.
    Explore(explore::Args),
    /// Run a scenario (JSON lines) through the kernel and print the trace.
    Replay(replay::Args),
    /// Check a runtime's audit log (JSON lines) against the kernel and the safety properties.
    Validate(validate::Args),
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Check(args) => check::run(&args),
        Command::Explore(args) => explore::run(&args),
        Command::Replay(args) => replay::run(&args),
        Command::Validate(args) => validate::run(&args),
    }
}
