//! `rondpoint completions SHELL` and `rondpoint man`: the shell's completion script and the
//! manual pages, generated from the same argument definitions as `--help` (clap_complete,
//! clap_mangen), so they never disagree with the binary.

use anyhow::{Context, Result};
use clap::Args;
use clap_complete::Shell;
use rondpoint_safeio::OutputKind;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell. For bash, for example:
    /// `rondpoint completions bash > /etc/bash_completion.d/rondpoint` (or
    /// `~/.local/share/bash-completion/completions/rondpoint` for one user).
    #[arg(value_enum, value_name = "SHELL")]
    shell: Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write a page per command into DIR (rondpoint.1, rondpoint-run.1, ...) instead of
    /// printing rondpoint.1: `rondpoint man --dir /usr/local/share/man/man1`.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
    /// Replace pages in DIR that rondpoint did not write.
    #[arg(long)]
    force: bool,
}

/// Prints the completion script of `cmd` for the shell asked for.
pub fn completions(args: &CompletionsArgs, mut cmd: clap::Command) -> Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "rondpoint", &mut script);
    out!("{}", String::from_utf8_lossy(&script));
    Ok(ExitCode::SUCCESS)
}

/// Prints the main page of `cmd`, or writes every command's page into `--dir`.
pub fn man(args: &ManArgs, cmd: clap::Command) -> Result<ExitCode> {
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let pages = pages(&cmd)?;
    let Some(dir) = &args.dir else {
        if let Some((_, text)) = pages.first() {
            out!("{}", String::from_utf8_lossy(text));
        }
        return Ok(ExitCode::SUCCESS);
    };
    if !dir.is_dir() {
        bad_input!("{} is not a directory", dir.display());
    }
    let replace = crate::options::replace(args.force, OutputKind::ManPage);
    for (name, text) in &pages {
        let path = dir.join(name);
        rondpoint_safeio::write_replacing(&path, text, replace)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    noteln!(
        "rondpoint: wrote {} manual pages into {} (man rondpoint)",
        pages.len(),
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Every page, the main command's first: (file name, roff text).
fn pages(cmd: &clap::Command) -> Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    let man = clap_mangen::Man::new(cmd.clone());
    let mut text = b".\\\" rondpoint manual page, made by `rondpoint man`\n".to_vec();
    man.render(&mut text)?;
    out.push((man.get_filename(), text));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        out.extend(pages(sub)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[derive(Debug, clap::Parser)]
    #[command(name = "rondpoint")]
    struct Cli {
        #[command(subcommand)]
        command: Sub,
    }

    #[derive(Debug, clap::Subcommand)]
    enum Sub {
        /// Run something.
        Run,
        /// List things.
        List,
    }

    #[test]
    fn a_page_per_command_each_marked_as_ours() {
        let mut cmd = Cli::command().disable_help_subcommand(true);
        cmd.build();
        let pages = pages(&cmd).unwrap();
        let names: Vec<&str> = pages.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["rondpoint.1", "rondpoint-run.1", "rondpoint-list.1"]
        );
        // Each begins as safeio's ManPage signature says, so `man --dir` replaces its own.
        for (_, text) in &pages {
            assert!(text.starts_with(b".\\\" rondpoint manual page"));
        }
        let run = String::from_utf8_lossy(&pages[1].1).into_owned();
        assert!(run.contains(".TH rondpoint-run 1"), "{run}");
        assert!(run.contains("rondpoint\\-run \\- Run something"), "{run}");
    }
}
