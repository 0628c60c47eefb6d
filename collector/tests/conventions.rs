//! The CLI conventions people expect: `nasprobe completions SHELL` gives a script the shell
//! loads (bash completes `nasprobe rep` to `report`), `nasprobe man` a manual page with every
//! subcommand and the exit codes.

use std::process::Command;

const NP: &str = env!("CARGO_BIN_EXE_nasprobe");

fn np(args: &[&str]) -> String {
    let out = Command::new(NP).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_bash_completion_loads_and_completes_rep_to_report() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("nasprobe.bash");
    std::fs::write(&script, np(&["completions", "bash"])).unwrap();
    // As bash calls a completion function: COMP_WORDS, COMP_CWORD, then (command, word, previous).
    let probe = format!(
        "source {}; COMP_WORDS=(nasprobe rep); COMP_CWORD=1; COMP_LINE='nasprobe rep'; \
         COMP_POINT=12; _nasprobe nasprobe rep nasprobe; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display()
    );
    let out = Command::new("bash")
        .args(["--noprofile", "--norc", "-c", &probe])
        .output()
        .expect("bash");
    let words = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(words.trim(), "report", "{out:?}");
}

#[test]
fn every_shell_gets_a_script_and_the_man_page_has_every_command() {
    for (shell, marker) in [
        ("zsh", "#compdef nasprobe"),
        ("fish", "complete -c nasprobe"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let s = np(&["completions", shell]);
        assert!(s.contains(marker) && s.contains("report"), "{shell}: {s}");
    }
    let page = np(&["man"]);
    assert!(page.contains(".TH nasprobe 1"), "{page}");
    for cmd in ["RECORD", "WATCH", "REPORT", "COMPLETIONS", "MAN"] {
        assert!(page.contains(&format!(".SH \"NASPROBE {cmd}\"")), "{cmd}");
    }
    assert!(page.contains("Exit status: 0 when every host delivered records"));
}
