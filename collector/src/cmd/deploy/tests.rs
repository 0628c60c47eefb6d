//! Unit tests of deploy: the rendered NAS-side files sourced in a real `sh`, the prefix rules.
use super::*;

#[test]
fn prefixes_that_resolve_to_system_folders_are_refused() {
    for bad in [
        "//etc",
        "/usr/..",
        "/volume1/../etc",
        "/",
        "/opt",
        "/usr/local/",
        "/a/../../usr/./bin",
        "/mnt/HD/HD_a2",
        "/etc/init.d//",
        "relative/path",
        "/opt/na\nsprobe",
    ] {
        assert!(check_prefix(bad).is_err(), "{bad:?} accepted");
    }
    assert_eq!(check_prefix("/opt/nasprobe/").unwrap(), "/opt/nasprobe");
    assert_eq!(
        check_prefix("/volume1//x/./nasprobe").unwrap(),
        "/volume1/x/nasprobe"
    );
    let e = check_prefix("/volume1/../etc").unwrap_err().to_string();
    assert!(e.contains("is /etc, the root or a top-level folder"), "{e}");
}

fn plan_for(family: Family, prefix: &str) -> Plan {
    Plan {
        remote: Remote::new("root@nas1", &[]),
        host: "nas1".into(),
        name: "nas1".into(),
        reach: "192.0.2.1:7451".into(),
        family,
        prefix: prefix.into(),
        sudo: "",
        init_dir: "/etc/init.d".into(),
        vars: String::new(),
    }
}

/// agent.conf and the init script's DIR line, sourced by a real `sh`: a `$(…)` in a value
/// stays text (the marker file is never made) and `it's` survives as itself.
#[test]
fn rendered_values_are_quoted_for_the_shell() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let evil = format!(
        "$(touch {}) it's `touch {}`",
        marker.display(),
        marker.display()
    );
    let prefix = format!("/opt/np $(touch {})'", marker.display());
    let (init, conf) = render(&plan_for(Family::Sysv, &prefix), 7451, &evil);
    let dir_line = init.lines().find(|l| l.starts_with("DIR=")).unwrap();
    let file = dir.path().join("vars");
    std::fs::write(&file, format!("{dir_line}\n{conf}")).unwrap();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            ". {}; printf '%s\\n%s\\n%s' \"$DIR\" \"$ARGS\" \"$NAME\"",
            file.display()
        ))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{prefix}\n{evil}\nnas1")
    );
    assert!(!marker.exists(), "a value ran as a command");
    assert_eq!(init.lines().count(), SYSV_INIT.lines().count());
}

#[test]
fn the_unit_carries_port_name_and_args() {
    let (unit, conf) = render(
        &plan_for(Family::Systemd, "/srv/np"),
        7460,
        "--interval 500",
    );
    assert!(conf.is_empty());
    assert!(unit.contains(
        "ExecStart=/srv/np/nasprobe-agent --listen 0.0.0.0:7460 --name nas1 --interval 500 \
         --token-file /srv/np/token"
    ));
    assert!(!unit.contains("/opt/nasprobe"));
    assert!(unit_safe("--mount=/volume1") && !unit_safe("$(id)") && !unit_safe("a%b"));
}
