//! `resumable`: the command line of the resumable lifecycle kernel.
//!
//! Each command lives in its own module with an `Args` struct (clap derive) and a `run`
//! function returning the exit status; adding a command is a module, a variant and an arm.
//! Exit status 2 means misuse or malformed input, for every command (clap's own errors too).

use clap::{Parser, Subcommand};
use std::process::ExitCode;

mod check;
mod decide;
mod digest;
mod explore;
mod output;
mod replay;
mod runs;
mod torture;
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
    /// Print the argument digest of one JSON document: SHA-256 of its RFC 8785 canonical form.
    Digest(digest::Args),
    /// Runtime: create a run of an agent program in a store.
    Start(runs::StartArgs),
    /// Runtime: drive runs (step, commit, dispatch, recover, reconcile, expire).
    Worker(runs::WorkerArgs),
    /// Runtime: show where runs are and who they wait on.
    Status(runs::StatusArgs),
    /// Runtime: write a run's audit log, ready for `validate`.
    Log(runs::LogArgs),
    /// Runtime: the tool service, with its own durable ledger.
    ToolService(runs::ToolServiceArgs),
    /// Runtime: approve the call a run waits on (or each undecided call of its batch).
    Approve(decide::ApproveArgs),
    /// Runtime: deny the call a run waits on, or its batch's undecided calls (the run fails).
    Deny(decide::ApproveArgs),
    /// Runtime: send the callback a run waits for.
    Callback(decide::CallbackArgs),
    /// Runtime: resolve a manual intervention (operator).
    Intervene(decide::InterveneArgs),
    /// Runtime: cancel a run (operator).
    Cancel(decide::CancelArgs),
    /// Runtime: an approver that watches the store and decides.
    Approver(decide::ApproverArgs),
    /// Runtime: kill workers with SIGKILL at seeded points, restart them, check what held.
    Torture(torture::Args),
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Check(args) => check::run(&args),
        Command::Explore(args) => explore::run(&args),
        Command::Replay(args) => replay::run(&args),
        Command::Validate(args) => validate::run(&args),
        Command::Digest(args) => digest::run(&args),
        Command::Start(args) => runs::start(&args),
        Command::Worker(args) => runs::worker(&args),
        Command::Status(args) => runs::status(&args),
        Command::Log(args) => runs::log(&args),
        Command::ToolService(args) => runs::tool_service(&args),
        Command::Approve(args) => decide::approve(&args, true),
        Command::Deny(args) => decide::approve(&args, false),
        Command::Callback(args) => decide::callback(&args),
        Command::Intervene(args) => decide::intervene(&args),
        Command::Cancel(args) => decide::cancel(&args),
        Command::Approver(args) => decide::approver(&args),
        Command::Torture(args) => torture::run(&args),
    }
}
