//! `nasprobe completions SHELL` and `nasprobe man`: the shell completion scripts and the manual
//! page, generated from the command definition ([`crate::cli::Cli`]) so they never drift from
//! `--help`. scripts/release puts both in the desktop bundles.

use std::io::Write;

use clap::CommandFactory;

use crate::cli::Cli;

/// The completion script for `shell` on stdout.
pub fn completions(shell: clap_complete::Shell) -> anyhow::Result<()> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "nasprobe", &mut out);
    write_out(&out)
}

/// The manual page of `nasprobe` (roff, section 1) with a section per subcommand.
pub fn man() -> anyhow::Result<()> {
    let cmd = Cli::command();
    let mut out = Vec::new();
    let page = clap_mangen::Man::new(cmd.clone());
    page.render_title(&mut out)?;
    page.render_name_section(&mut out)?;
    page.render_synopsis_section(&mut out)?;
    page.render_description_section(&mut out)?;
    page.render_options_section(&mut out)?;
    // Each subcommand with its own options, as `nasprobe CMD --help` says them.
    // Each subcommand with its own options, as `nasprobe CMD --help` says them: a section
    // each, its parts (synopsis, description, options) subsections.
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        writeln!(out, ".SH \"NASPROBE {}\"", sub.get_name().to_uppercase())?;
        let sub = sub.clone().bin_name(format!("nasprobe {}", sub.get_name()));
        let m = clap_mangen::Man::new(sub);
        let mut part = Vec::new();
        m.render_synopsis_section(&mut part)?;
        m.render_description_section(&mut part)?;
        m.render_options_section(&mut part)?;
        m.render_subcommands_section(&mut part)?;
        m.render_extra_section(&mut part)?;
        let part = format!("\n{}", String::from_utf8_lossy(&part)).replace("\n.SH ", "\n.SS ");
        out.extend_from_slice(&part.as_bytes()[1..]);
    }
    page.render_extra_section(&mut out)?;
    page.render_version_section(&mut out)?;
    write_out(&out)
}

fn write_out(bytes: &[u8]) -> anyhow::Result<()> {
    let mut o = crate::output::stdout();
    o.text(&String::from_utf8_lossy(bytes))?;
    o.finish()?;
    Ok(())
}
