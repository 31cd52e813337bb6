//! Each subcommand's arguments built only when clap enters it.

use clap::{ArgMatches, Args, FromArgMatches};

use super::Cli;

/// A subcommand's arguments, added to its `clap::Command` only when clap enters that
/// subcommand or renders it (its help, completions, man pages). `agentprof check disk` then
/// builds the arguments of one subcommand, not of all fourteen: building them all was most of
/// the heap a short command peaked at (~180 KB of the 200 KB) and its code was paged in at
/// every start. What is parsed and printed is the same; the help tests and the generated
/// completions and man pages check it.
#[derive(Debug)]
pub struct Lazy<T>(pub T);

impl<T> std::ops::Deref for Lazy<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: FromArgMatches> FromArgMatches for Lazy<T> {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches(m).map(Lazy)
    }
    fn from_arg_matches_mut(m: &mut ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches_mut(m).map(Lazy)
    }
    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(m)
    }
    fn update_from_arg_matches_mut(&mut self, m: &mut ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches_mut(m)
    }
}

// Whether `Lazy` defers, for the thread building the command: off unless `defer_arguments`
// was called, so completions, man pages and `agentprof help …` (whose tree mirrors every
// subcommand's subcommands when the root is built) see every argument.
thread_local! {
    static DEFER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Builds each subcommand's arguments only when clap enters it (see `Lazy`), for commands
/// built on this thread.
pub fn defer_arguments() {
    DEFER.set(true);
}

/// The whole command, every subcommand's arguments built: what completions and man pages
/// are generated from.
pub fn full_command() -> clap::Command {
    DEFER.set(false);
    <Cli as clap::CommandFactory>::command()
}

fn deferring() -> bool {
    DEFER.get()
}

impl<T: Args> Args for Lazy<T> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        if deferring() {
            cmd.defer(|c| keeping_about(c, T::augment_args))
        } else {
            T::augment_args(cmd)
        }
    }
    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        if deferring() {
            cmd.defer(|c| keeping_about(c, T::augment_args_for_update))
        } else {
            T::augment_args_for_update(cmd)
        }
    }
    fn group_id() -> Option<clap::Id> {
        T::group_id()
    }
}

/// Adds the arguments, keeping the subcommand's own description: a flattened struct's doc
/// comment (`ConfigArgs`, `ProfileLimitArgs`…) sets one too, and added late it would win.
fn keeping_about(cmd: clap::Command, add: fn(clap::Command) -> clap::Command) -> clap::Command {
    let about = cmd.get_about().cloned();
    let long_about = cmd.get_long_about().cloned();
    let cmd = add(cmd);
    let cmd = match about {
        Some(a) => cmd.about(a),
        None => cmd.about(None::<&'static str>),
    };
    match long_about {
        Some(a) => cmd.long_about(a),
        None => cmd.long_about(None::<&'static str>),
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::*;

    fn check(root: &clap::Command) -> &clap::Command {
        root.get_subcommands()
            .find(|s| s.get_name() == "check")
            .expect("check")
    }

    #[test]
    fn deferred_arguments_are_built_when_the_subcommand_is_entered() {
        let full = full_command();
        let eager: Vec<_> = check(&full)
            .get_arguments()
            .map(|a| a.get_id().clone())
            .collect();
        assert!(eager.iter().any(|id| id == "profile"), "{eager:?}");

        defer_arguments();
        let lazy = Cli::command();
        assert_eq!(
            check(&lazy).get_arguments().count(),
            0,
            "nothing built before parsing"
        );
        assert_eq!(
            check(&lazy).get_about().map(|a| a.to_string()),
            check(&full).get_about().map(|a| a.to_string())
        );
        let parsed = Cli::try_parse_from(["agentprof", "check", "disk", "--profile", "-t", "3"]);
        DEFER.set(false);
        let Ok(Cli {
            command: super::super::Command::Check(args),
        }) = parsed
        else {
            panic!("{parsed:?}");
        };
        assert!(args.profile);
        assert_eq!(args.times, 3);
    }

    #[test]
    fn a_deferred_subcommand_keeps_its_own_description() {
        defer_arguments();
        let mut root = Cli::command();
        DEFER.set(false);
        let help = root
            .find_subcommand_mut("check")
            .expect("check")
            .render_long_help()
            .to_string();
        assert!(help.starts_with("Run one check once"), "{help}");
    }
}
