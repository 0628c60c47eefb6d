//! `nasprobe`: the collector command line. Exit codes: 0 ok, 1 failure, 2 usage.

#![deny(clippy::print_stderr)]

use clap::Parser;
use nasprobe::cli::{Cli, Command, TestCommand, exit};

fn main() {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::USAGE
            } else {
                exit::OK
            };
            e.print().ok();
            std::process::exit(code);
        }
    };
    // -q/-v set the level; RUST_LOG, when set, decides instead.
    let level = cli.common.log_level().as_str().to_ascii_lowercase();
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(level)).init();
    nasprobe::output::set_quiet(cli.common.quiet);
    let code = match run(cli) {
        Ok(()) => exit::OK,
        // The reader of stdout went away (`| head`): a normal end, said nowhere.
        Err(e) if nasprobe::output::is_closed_pipe(&e) => exit::OK,
        Err(e) => {
            nasprobe::errln!("nasprobe: {e}");
            for cause in e.chain().skip(1) {
                nasprobe::errln!("  caused by: {cause}");
            }
            exit::FAILURE
        }
    };
    std::process::exit(code);
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let c = &cli.common.context();
    match cli.command {
        Command::Record {
            duration,
            push,
            alerts,
            hosts,
        } => nasprobe::cmd::record::run(c, duration, &push, &alerts.args(), &hosts),
        Command::Alerts {
            list,
            since,
            json,
            alerts,
        } => nasprobe::cmd::alerts::run(c, list, since, json, &alerts.args()),
        Command::Export {
            format,
            since,
            host,
            push_vm,
            remote_write,
            remote_write_auth,
            remote_write_header,
        } => match (push_vm, remote_write) {
            (Some(url), _) => nasprobe::cmd::export::push_vm(c, &url),
            (None, Some(url)) => nasprobe::cmd::export::push_remote_write(
                c,
                &url,
                remote_write_auth.as_deref(),
                &remote_write_header,
            ),
            (None, None) => nasprobe::cmd::export::run(c, format, since, &host),
        },
        Command::Serve {
            metrics,
            max_age,
            duration,
            push,
            alerts,
            hosts,
        } => nasprobe::cmd::serve::run(
            c,
            &metrics,
            (!max_age.is_zero()).then_some(max_age),
            duration,
            &push,
            &alerts.args(),
            &hosts,
        ),
        Command::Watch {
            local,
            show_self,
            duration,
            plain,
            push,
            alerts,
            hosts,
        } => nasprobe::cmd::watch::run(
            c,
            local,
            show_self,
            duration,
            plain,
            &push,
            &alerts.args(),
            &hosts,
        ),
        Command::Report {
            since,
            until,
            copy,
            json,
            expect,
            html,
            host,
        } => nasprobe::cmd::report::run(
            c,
            &nasprobe::cmd::report::ReportArgs {
                since,
                until,
                copy,
                json,
                expect_bytes: expect,
                html,
                hosts: host,
            },
        ),
        Command::Events { since, json } => nasprobe::cmd::report::events(c, since, json),
        Command::Check => nasprobe::cmd::report::check(c),
        Command::Test {
            command:
                TestCommand::Net {
                    src,
                    dst,
                    seconds,
                    streams,
                    max_bytes,
                    json,
                },
        } => nasprobe::cmd::test::net(c, &src, &dst, seconds, &streams, max_bytes, json),
        Command::Test {
            command:
                TestCommand::Disk {
                    host,
                    path,
                    size,
                    allow_tmpfs,
                    json,
                },
        } => nasprobe::cmd::test::disk(c, &host, &path, size, allow_tmpfs, json),
        Command::Ladder {
            dir,
            agents,
            big,
            series,
            link_mbit,
            json,
        } => nasprobe::cmd::ladder::run(
            c,
            &nasprobe::cmd::ladder::LadderArgs {
                dir,
                agents,
                big,
                series_from: series.0,
                series_to: series.1,
                link_mbit,
                json,
            },
        ),
        Command::Deploy(flags) => nasprobe::cmd::deploy::run(c, &flags),
        Command::Hosts { command } => nasprobe::cmd::hosts::run(c, command),
        Command::Completions { shell } => nasprobe::cmd::shell::completions(shell),
        Command::Man => nasprobe::cmd::shell::man(),
    }
}
