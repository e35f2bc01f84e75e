//! `resumable check`: explore every interleaving of the world around runs (workers that race
//! and crash, approvers, a lossy tool, a clock) and report, per property, whether it holds.
//!
//! Exit status: 0 every property holds, each exercised, on a complete exploration; 1 a
//! property is violated; 2 misuse (or a check that could not run, or output that could not
//! be written); 3 a bound cut the exploration short without a violation; 4 no violation,
//! but a property was not exercised (an `always` whose `sometimes` partner was never
//! reached). The report's format is documented in spec/check-output.md.

mod grid;
mod suite;

pub use crate::output::Format;
use crate::output::{self, Error};
use clap::ValueEnum;
use resumable_kernel::IdentityField;
use resumable_model::checker::{self, memory, subject::config_json, Options, Reduction, Report};
use resumable_model::config::{Config, Program};
use resumable_model::driving::Driving;
use resumable_model::reference::Reference;
use resumable_model::variant::Variant;
use resumable_model::world::World;
use resumable_model::{Kernel, Lifecycle};
use std::process::ExitCode;
use std::time::Duration;

/// The lifecycle implementation under check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Subject {
    /// The kernel crate's `step`, the default.
    Kernel,
    /// The model's independent reference machine (broken variants are built on it).
    Reference,
}

/// How counterexamples and witnesses are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TraceFormat {
    /// Numbered steps, each with the state after it, for people.
    Text,
    /// The Informal Trace Format of Apalache and Quint (JSON), for tools: in the text
    /// report in place of the numbered steps, in the JSON report as each trace's `itf`.
    Itf,
}

/// Which reduction of the interleavings the search applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReductionArg {
    /// Every enabled action in every state.
    None,
    /// Partial-order reduction: where the world shows an action that commutes with
    /// everything that can come before it and that no property tells, only that action
    /// (spec/check-output.md, "Partial-order reduction").
    Por,
    /// The per-run reduction of a two-run world: each run checked alone, in a world of its
    /// own with every worker and budget and a clock that may pass at any step
    /// (spec/check-output.md, "The per-run reduction").
    PerRun,
}

/// The agent program each run executes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProgramArg {
    /// Suspend for approval of a gated call, run it, complete.
    Approval,
    /// Dispatch an ungated call, complete.
    Direct,
    /// Dispatch an ungated call, then suspend for approval of a gated one, then complete.
    SideEffectFirst,
    /// Dispatch an ungated call, suspend for approval of a gated one, dispatch a third,
    /// complete; where the third is due the agent may propose an earlier call again.
    ThreeCalls,
    /// Suspend for a batch of two gated calls, each decided on its own, run the approved
    /// ones together, complete.
    Batch,
}

/// The one identity field in which the two runs' identities differ (spec ID-1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FieldArg {
    /// The tenant.
    Tenant,
    /// The session.
    Session,
    /// The run id.
    Run,
    /// The run's definition.
    Definition,
}

/// What is checked: the subject and the world around it. Shared by `check` and `explore`.
/// A flag left out keeps the starting configuration: `Config::default`, or with `--variant`
/// the smallest configuration in which that variant's flaw is reachable (`Config::exposing`),
/// so that a broken variant is never reported as passing merely because the default world
/// cannot reach its flaw.
#[derive(clap::Args, Debug, Clone, Default, PartialEq)]
pub struct ModelArgs {
    /// The lifecycle under check [default: kernel; reference with --variant].
    #[arg(long, value_enum)]
    pub subject: Option<Subject>,
    /// A deliberately broken variant of the reference machine (see --list-variants).
    #[arg(long, value_name = "NAME", value_parser = variant_names())]
    pub variant: Option<String>,
    /// One world of the default check to start from [default, without any flag about the
    /// world: all of them, merged].
    #[arg(long, value_name = "NAME", value_parser = world_names())]
    pub world: Option<String>,
    /// Runs (1 or 2; two runs belong to different tenants).
    #[arg(long)]
    pub runs: Option<u8>,
    /// Workers racing on the store's compare-and-set (1 to 4).
    #[arg(long)]
    pub workers: Option<u8>,
    /// Crash budget: how many times in all a worker may crash.
    #[arg(long)]
    pub crashes: Option<u8>,
    /// Approver instances (0 to 3); each may send one decision per checkpoint.
    #[arg(long)]
    pub approvers: Option<u8>,
    /// The tool dedupes by idempotency key (`--dedupes=false` to turn off).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub dedupes: Option<bool>,
    /// The tool's status query fences the key it answers "not committed" for.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub query_fences: Option<bool>,
    /// Loss budget: how many tool responses the network may lose in all.
    #[arg(long)]
    pub losses: Option<u8>,
    /// How many extra deliveries of decisions the network may make in all.
    #[arg(long)]
    pub duplicates: Option<u8>,
    /// Attempts the tool call's contract allows in all (1 to 4).
    #[arg(long)]
    pub max_attempts: Option<u8>,
    /// The clock runs from tick 0 to this tick.
    #[arg(long)]
    pub max_time: Option<u8>,
    /// The agent program each run executes.
    #[arg(long, value_enum)]
    pub program: Option<ProgramArg>,
    /// The requester also tries to approve its own call.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub self_approval: Option<bool>,
    /// An approver may approve an edited version of the call.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub edited_approvals: Option<bool>,
    /// With two runs, an approval of run 1's checkpoint is also sent to run 0.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub cross_tenant: Option<bool>,
    /// With two runs, both act on one resource: a commit of either run's call moves it for
    /// both.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub shared_resource: Option<bool>,
    /// The two runs' identities differ in this field alone [default: tenant, session and
    /// run all differ].
    #[arg(long, value_enum, value_name = "FIELD")]
    pub differs_in: Option<FieldArg>,
    /// The status query may also answer "unknown".
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub query_unknown: Option<bool>,
    /// With `--program batch`, the approver gives every verdict (approve, edit, reject,
    /// answer, deny); with false, it only approves.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub batch_verdicts: Option<bool>,
    /// An operator settles manual interventions.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub operator: Option<bool>,
    /// How many cancel requests the run's owner may send in all.
    #[arg(long)]
    pub cancels: Option<u8>,
    /// How many times the agent of `--program three-calls` may propose an earlier call id or
    /// key again.
    #[arg(long)]
    pub reuses: Option<u8>,
    /// How many times an outsider may move a run's resource.
    #[arg(long)]
    pub outsider_moves: Option<u8>,
    /// How many times the framework may change a pending call's arguments in the agent's
    /// state before its resume.
    #[arg(long)]
    pub arg_changes: Option<u8>,
    /// How many times the agent's node, run again, proposes a new call under the call id of
    /// one whose result is recorded.
    #[arg(long)]
    pub renewals: Option<u8>,
    /// How many times the framework resumes the agent's node from an old config (taken while
    /// the gated call waited for approval) once that call's result is recorded.
    #[arg(long)]
    pub old_configs: Option<u8>,
    /// How many times the agent's node asks a second question after its gated call.
    #[arg(long)]
    pub questions: Option<u8>,
    /// The version the runs' resource starts at.
    #[arg(long)]
    pub resource_start: Option<u8>,
    /// Ticks an approval suspension lasts before it expires.
    #[arg(long)]
    pub suspend_for: Option<u8>,
    /// Ticks an approval is valid after it is given.
    #[arg(long)]
    pub approval_ttl: Option<u8>,
    /// Ticks a reconciliation or manual intervention may wait.
    #[arg(long)]
    pub reconcile_window: Option<u8>,
    /// No input is offered to a run at or past this revision.
    #[arg(long)]
    pub max_revision: Option<u8>,
}

fn world_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(Config::suite().map(|(name, _)| name))
}

/// The broken variants of the reference machine, then the broken drivings of the world's
/// workers (the kernel driven by an adapter that breaks one rule of the driving contract).
fn variant_names() -> clap::builder::PossibleValuesParser {
    let names =
        (Variant::ALL.map(Variant::name).into_iter()).chain(Driving::BROKEN.map(Driving::name));
    clap::builder::PossibleValuesParser::new(names)
}

/// Arguments of `check`.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The subject and its world.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Worker threads of the checker.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: u16,
    /// Check every state at most N steps from the start, and none further (an exploration
    /// this bound cuts short is incomplete, exit 3).
    #[arg(long, value_name = "N")]
    pub depth: Option<usize>,
    /// Expand at most N states (a cut exploration is incomplete, exit 3).
    #[arg(long, value_name = "N")]
    pub max_states: Option<usize>,
    /// Stop after SECS seconds (a cut exploration is incomplete, exit 3).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<f64>,
    /// Stop when the resident memory passes SIZE, e.g. 512M or 4G; a bare number is MiB (a
    /// cut exploration is incomplete, exit 3) [default: half the machine's memory].
    #[arg(long, value_name = "SIZE", value_parser = memory::parse_size)]
    pub max_memory: Option<u64>,
    /// Explore on past the first violation, to judge every property (by default the check
    /// stops once the depth of the first violation is checked).
    #[arg(long)]
    pub keep_going: bool,
    /// Symmetry reduction over interchangeable workers.
    #[arg(long)]
    pub symmetry: bool,
    /// Reduction of interleavings: none; partial-order reduction (same verdicts,
    /// counterexamples as short; fewer states where the world has actions to take alone); or,
    /// for two runs, the per-run reduction (each run in a world of its own).
    #[arg(long, value_enum, default_value_t = ReductionArg::None)]
    pub reduction: ReductionArg,
    /// Also print a shortest witness for each `sometimes` property.
    #[arg(long)]
    pub witnesses: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// How counterexamples and witnesses are written.
    #[arg(long, value_enum, default_value_t = TraceFormat::Text)]
    pub trace_format: TraceFormat,
    /// Print the broken variants, one per line: the name, then what it does wrong.
    #[arg(long, exclusive = true)]
    pub list_variants: bool,
    /// Print the grid of configurations the heavier checks cover, as a JSON matrix for a CI
    /// system to run one job per cell (each an ordinary `check`).
    #[arg(long, exclusive = true)]
    pub grid: bool,
    /// Fold the JSON reports of several checks (the cells of `--grid`) into one report,
    /// with the exit status of a single check.
    #[arg(long, value_name = "FILE", num_args = 1..)]
    pub merge: Option<Vec<String>>,
}

impl Args {
    /// Whether any flag about how to explore was given.
    fn explores(&self) -> bool {
        self.threads != 1
            || self.depth.is_some()
            || self.max_states.is_some()
            || self.timeout.is_some()
            || self.max_memory.is_some()
            || self.keep_going
            || self.symmetry
            || self.reduction != ReductionArg::None
            || self.witnesses
            || self.trace_format != TraceFormat::Text
    }
}

/// A subject and a validated configuration, ready to build a world.
#[derive(Clone)]
pub struct Setup {
    /// The reference machine with this variant, or the kernel when `None`.
    pub lifecycle: Option<Reference>,
    /// The world's configuration.
    pub config: Config,
    /// The subject's name for reports: "kernel", "reference" or the variant's name.
    pub name: String,
    /// Which configuration the check started from, and why, for the text report's header.
    pub origin: String,
}

impl ModelArgs {
    /// The subject and the configuration, or a one-line reason they are misused.
    pub fn setup(&self, depth: Option<usize>) -> Result<Setup, String> {
        if let Some(driving) = self.variant.as_deref().and_then(Driving::from_name) {
            return self.setup_driving(driving, depth);
        }
        let variant = match &self.variant {
            Some(name) => {
                Some(Variant::from_name(name).ok_or_else(|| format!("no variant named {name}"))?)
            }
            None => None,
        };
        let lifecycle = match (self.subject, variant) {
            (Some(Subject::Kernel), Some(v)) => {
                return Err(format!(
                    "--variant {v} breaks the reference machine; it cannot be combined with \
                     --subject kernel"
                ))
            }
            (Some(Subject::Kernel), None) | (None, None) => None,
            (Some(Subject::Reference), v) | (None, v @ Some(_)) => Some(Reference { variant: v }),
        };
        // A variant starts from the world that can reach its flaw, or the world of the
        // default check named; the flags given on the command line, and only those, are
        // applied on top.
        let (mut config, origin) = match (variant, self.suite_world()?) {
            (Some(v), None) => (
                Config::exposing(v),
                format!(
                    "the smallest configuration that exposes {v} (breaks {})",
                    v.targets_named()
                ),
            ),
            (_, Some((config, origin))) => (config, origin),
            (None, None) => (Config::default(), "the default configuration".to_owned()),
        };
        let origin = format!("{origin}, with the flags given applied on top");
        self.apply(&mut config);
        config.depth_bound = depth;
        config.validate().map_err(|e| e.to_string())?;
        let name = match lifecycle {
            None => "kernel".to_owned(),
            Some(Reference { variant: None }) => "reference".to_owned(),
            Some(Reference { variant: Some(v) }) => v.name().to_owned(),
        };
        Ok(Setup {
            lifecycle,
            config,
            name,
            origin,
        })
    }
}

impl ModelArgs {
    /// The subject (the kernel, unless `--subject reference`) driven by workers that break
    /// one rule of the driving contract, in the smallest world that exposes it.
    fn setup_driving(&self, driving: Driving, depth: Option<usize>) -> Result<Setup, String> {
        let lifecycle = match self.subject {
            Some(Subject::Reference) => Some(Reference::default()),
            Some(Subject::Kernel) | None => None,
        };
        let (mut config, origin) = match self.suite_world()? {
            Some((world, origin)) => (Config { driving, ..world }, origin),
            None => (
                Config::exposing_driving(driving),
                format!("the smallest configuration that exposes {driving}"),
            ),
        };
        self.apply(&mut config);
        config.depth_bound = depth;
        config.validate().map_err(|e| e.to_string())?;
        let subject = if lifecycle.is_some() {
            "reference"
        } else {
            "kernel"
        };
        Ok(Setup {
            lifecycle,
            config,
            name: driving.name().to_owned(),
            origin: format!(
                "{origin} (the {subject} driven by workers that break {}), with the flags given \
                 applied on top",
                driving.targets_named()
            ),
        })
    }

    /// The world of the default check `--world` names, with where it comes from.
    fn suite_world(&self) -> Result<Option<(Config, String)>, String> {
        let Some(world) = self.world.as_deref() else {
            return Ok(None);
        };
        let config = (Config::suite().into_iter())
            .find(|(name, _)| *name == world)
            .map(|(_, config)| config)
            .ok_or_else(|| format!("no world named {world}"))?;
        let origin = match world {
            "default" => "the default configuration".to_owned(),
            other => format!("the world {other} of the default check"),
        };
        Ok(Some((config, origin)))
    }

    /// Applies the flags given to `config`; a flag left out leaves its field as it is.
    fn apply(&self, config: &mut Config) {
        let set = |field: &mut u8, value: Option<u8>| {
            if let Some(value) = value {
                *field = value;
            }
        };
        set(&mut config.runs, self.runs);
        set(&mut config.workers, self.workers);
        set(&mut config.crashes, self.crashes);
        set(&mut config.approvers, self.approvers);
        set(&mut config.losses, self.losses);
        set(&mut config.duplicates, self.duplicates);
        set(&mut config.max_attempts, self.max_attempts);
        set(&mut config.max_time, self.max_time);
        set(&mut config.cancels, self.cancels);
        set(&mut config.reuses, self.reuses);
        set(&mut config.outsider_moves, self.outsider_moves);
        set(&mut config.arg_changes, self.arg_changes);
        set(&mut config.renewals, self.renewals);
        set(&mut config.old_configs, self.old_configs);
        set(&mut config.questions, self.questions);
        set(&mut config.resource_start, self.resource_start);
        set(&mut config.suspend_for, self.suspend_for);
        set(&mut config.approval_ttl, self.approval_ttl);
        set(&mut config.reconcile_window, self.reconcile_window);
        set(&mut config.max_revision, self.max_revision);
        let switch = |field: &mut bool, value: Option<bool>| {
            if let Some(value) = value {
                *field = value;
            }
        };
        switch(&mut config.dedupes, self.dedupes);
        switch(&mut config.query_fences, self.query_fences);
        switch(&mut config.self_approval, self.self_approval);
        switch(&mut config.edited_approvals, self.edited_approvals);
        switch(&mut config.cross_tenant, self.cross_tenant);
        switch(&mut config.shared_resource, self.shared_resource);
        switch(&mut config.query_unknown, self.query_unknown);
        switch(&mut config.operator, self.operator);
        switch(&mut config.batch_verdicts, self.batch_verdicts);
        if let Some(field) = self.differs_in {
            config.differs_in = Some(match field {
                FieldArg::Tenant => IdentityField::Tenant,
                FieldArg::Session => IdentityField::Session,
                FieldArg::Run => IdentityField::Run,
                FieldArg::Definition => IdentityField::Definition,
            });
        }
        if let Some(program) = self.program {
            config.program = match program {
                ProgramArg::Approval => Program::Approval,
                ProgramArg::Direct => Program::Direct,
                ProgramArg::SideEffectFirst => Program::SideEffectFirst,
                ProgramArg::ThreeCalls => Program::ThreeCalls,
                ProgramArg::Batch => Program::Batch,
            };
        }
    }
}

pub(crate) fn misuse(message: &str) -> ExitCode {
    output::fail(
        Format::Text,
        &Error::new("misuse", format!("resumable check: {message}")),
    )
}

/// Runs the command and returns its exit status.
pub fn run(args: &Args) -> ExitCode {
    if args.list_variants {
        return list_variants();
    }
    if args.grid {
        return grid::print();
    }
    if let Some(files) = &args.merge {
        if args.model != ModelArgs::default() || args.explores() {
            return misuse("--merge reads reports; it takes no other flag but --format");
        }
        return grid::merge_files(files, args.format == Format::Json);
    }
    let timeout = match args.timeout.map(Duration::try_from_secs_f64) {
        None => None,
        Some(Ok(timeout)) => Some(timeout),
        Some(Err(_)) => return misuse("--timeout must be a number of seconds, 0 or more"),
    };
    // Nothing said about the world: every world of the default check, merged.
    let about_world = ModelArgs {
        subject: None,
        ..args.model.clone()
    };
    if about_world == ModelArgs::default() {
        if args.reduction == ReductionArg::PerRun {
            return misuse("--reduction per-run reduces a world of two runs: give --runs 2");
        }
        return suite::run(args, timeout);
    }
    let setup = match args.model.setup(args.depth) {
        Ok(setup) => setup,
        Err(message) => return misuse(&message),
    };
    if args.reduction == ReductionArg::PerRun {
        return suite::per_run(args, timeout, setup);
    }
    if args.format == Format::Text {
        let heading = format!(
            "checking {} in {}\nconfiguration: {}\n\n",
            setup.name,
            describe(&setup.config),
            setup.origin
        );
        // The verdict still matters when nobody reads the heading (its exit status), so a
        // closed pipe does not stop the check; a write that fails otherwise does.
        if let Err(output::Ended::Failed(e)) = output::print(&heading) {
            return misuse(&format!("cannot write the output: {e}"));
        }
    }
    let result = match setup.lifecycle {
        None => check_world(Kernel, &setup, args, timeout),
        Some(reference) => check_world(reference, &setup, args, timeout),
    };
    match result {
        Ok(report) => {
            // Two runs multiply: where the whole world was cut short, say what does finish.
            if report.exit_code == output::status::INCOMPLETE && setup.config.per_run().is_ok() {
                output::note(
                    "note: two runs multiply each other's states; `--reduction per-run` checks \
                     each run alone, soundly (spec/check-output.md, \"The per-run reduction\")",
                );
            }
            let text = match (args.format, &args.model.variant) {
                (Format::Text, Some(name)) => format!(
                    "{}\nwhy it matters, and how real runtimes get there: \
                     spec/counterexamples.md#{name} (in the book: \"Every broken design and \
                     its story\")\n",
                    report.to_text_counterexample_first()
                ),
                (Format::Text, None) => report.to_text(),
                (Format::Json, _) => format!("{}\n", report.to_json()),
            };
            output::finish(args.format, &text, report.exit_code)
        }
        Err(message) => misuse(&message),
    }
}

fn list_variants() -> ExitCode {
    let width = (Variant::ALL.map(Variant::name).into_iter())
        .chain(Driving::BROKEN.map(Driving::name))
        .map(str::len)
        .max()
        .unwrap_or(0);
    let mut text = String::new();
    for v in Variant::ALL {
        text.push_str(&format!("{:<width$}  {}\n", v.name(), v.description()));
    }
    // The drivings follow: the kernel itself, driven by a worker that breaks one rule.
    for d in Driving::BROKEN {
        let what = format!("(the worker's driving) {}", d.description());
        text.push_str(&format!("{:<width$}  {what}\n", d.name()));
    }
    output::finish(Format::Text, &text, output::status::PASS)
}

pub(crate) fn check_world<L: Lifecycle>(
    lifecycle: L,
    setup: &Setup,
    args: &Args,
    timeout: Option<Duration>,
) -> Result<Report, String> {
    let world = World::new(lifecycle, setup.config).map_err(|e| e.to_string())?;
    let mut options = Options {
        threads: usize::from(args.threads),
        depth: args.depth,
        max_states: args.max_states,
        timeout,
        keep_going: args.keep_going,
        witnesses: args.witnesses,
        itf: args.trace_format == TraceFormat::Itf,
        reduction: match args.reduction {
            // The per-run reduction is in the worlds checked, not in their search.
            ReductionArg::None | ReductionArg::PerRun => Reduction::None,
            ReductionArg::Por => Reduction::PartialOrder,
        },
        ..Options::default()
    };
    if let Some(bytes) = args.max_memory {
        options.max_memory_bytes = Some(bytes);
    }
    if args.symmetry {
        options = options.with_symmetry();
    }
    // Progress goes to stderr, so it never mixes with a report read from stdout.
    let mut report = checker::check_with_progress(world, &options, |progress| {
        output::note(&progress.to_string());
    })
    .map_err(|e| e.to_string())?;
    report.model = setup.name.clone();
    report.config = config_json(&setup.config);
    Ok(report)
}

/// The configuration in one line of words, for the text report's heading.
pub fn describe(config: &Config) -> String {
    let count = |n: u8, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    format!(
        "a world of {}, {}, {}, {}, {} and {}; a tool that {} and whose query {}; program {}",
        count(config.runs, "run", "runs"),
        count(config.workers, "worker", "workers"),
        count(config.approvers, "approver", "approvers"),
        count(config.crashes, "crash", "crashes"),
        count(config.losses, "lost response", "lost responses"),
        count(
            config.duplicates,
            "duplicated decision",
            "duplicated decisions"
        ),
        if config.dedupes {
            "dedupes"
        } else {
            "does not dedupe"
        },
        if config.query_fences {
            "fences"
        } else {
            "does not fence"
        },
        config.program.name()
    ) + &extras(config)
}

/// What the configuration turns on beyond the counts `describe` lists (the exposing
/// configurations of some variants need these), as "; with ..." or nothing.
fn extras(config: &Config) -> String {
    let mut on = budgets(config);
    switches(config, &mut on);
    if on.is_empty() {
        String::new()
    } else {
        format!("; with {}", on.join(", "))
    }
}

/// The framework's and the outsider's moves the configuration allows, with their budgets.
fn budgets(config: &Config) -> Vec<String> {
    // (budget, one, many)
    let moves = [
        (config.cancels, "cancel", "cancels"),
        (
            config.reuses,
            "reuse of an earlier call",
            "reuses of earlier calls",
        ),
        (
            config.outsider_moves,
            "move of the resource by an outsider",
            "moves of the resource by an outsider",
        ),
        (
            config.arg_changes,
            "change of a pending call's arguments by the framework",
            "changes of a pending call's arguments by the framework",
        ),
        (
            config.renewals,
            "new call under a recorded call's id",
            "new calls under a recorded call's id",
        ),
        (
            config.old_configs,
            "resume from an old config",
            "resumes from an old config",
        ),
        (
            config.questions,
            "second question after the gated call",
            "second questions after the gated call",
        ),
    ];
    (moves.iter().filter(|(n, ..)| *n > 0))
        .map(|&(n, one, many)| format!("{n} {}", if n == 1 { one } else { many }))
        .collect()
}

/// The switches the configuration turns on, each as the words `extras` lists.
fn switches(config: &Config, on: &mut Vec<String>) {
    if config.resource_start > 0 {
        on.push(format!(
            "the resource starting at version {}",
            config.resource_start
        ));
    }
    if config.self_approval {
        on.push("the requester approving its own call".to_owned());
    }
    if config.edited_approvals {
        on.push("approvals of edited arguments".to_owned());
    }
    if config.shared_resource {
        on.push("one resource both runs act on".to_owned());
    }
    match (config.cross_tenant, config.differs_in) {
        (true, None) => on.push("a checkpoint offered across tenants".to_owned()),
        (true, Some(field)) => on.push(format!(
            "a checkpoint offered across runs differing in {field} alone"
        )),
        (false, Some(field)) => on.push(format!("runs differing in {field} alone")),
        (false, None) => {}
    }
    if config.identity > 0 {
        on.push(format!(
            "the run under the identity of run {}",
            config.identity
        ));
    }
    if config.free_clock {
        on.push("a clock that may pass at any step".to_owned());
    }
    if config.foreign_commits > 0 {
        on.push(
            "the run left out committing under a tool key not bound to this run's identity"
                .to_owned(),
        );
    }
    if config.driving != Driving::Honest {
        on.push(format!("workers driving as {}", config.driving));
    }
    if !config.query_unknown {
        on.push("a query that never answers unknown".to_owned());
    }
    if config.operator {
        on.push("an operator settling manual interventions".to_owned());
    }
    if config.program == Program::Batch && !config.batch_verdicts {
        on.push("batch decisions that only approve".to_owned());
    }
}
