//! The agent's `sample` command (on the NAS) and the collector (exporters, views, report) print
//! the same figures for the same sample: both compute through `nasprobe-formulas`. The sample
//! is the testing NAS's busy one, with a disk that reports more busy time than the interval and
//! a NIC of unknown duplex, where the two sides used to disagree.

use nasprobe::export::metrics::{self, Points};
use nasprobe::testing::{nas_hello, nas_sample};
use nasprobe_proto::flags;

fn points(name: &str, p: &Points) -> Vec<(Option<String>, f64)> {
    p.0.iter()
        .filter(|x| x.metric.name == name)
        .map(|x| {
            (
                x.label("device")
                    .or(x.label("cpu"))
                    .or(x.label("process"))
                    .map(str::to_string),
                x.value,
            )
        })
        .collect()
}

#[test]
fn agent_sample_and_collector_print_the_same_figures() {
    let hello = nas_hello(1, 1_700_000_000_000, 1000);
    let mut s = nas_sample(3);
    s.disks[1].io_ms = s.interval_us / 1000 + 40;
    s.nics[0].flags = flags::LINK_UP | flags::DUPLEX_UNKNOWN;
    s.nics[0].tx_bytes = 40_000_000;

    let mut text = String::new();
    nasprobe_agent::sample_cmd::human(&mut text, &hello, &s);
    let mut pts = Points::default();
    metrics::emit_sample(&mut pts, "nas", &hello, &s, 1);

    let util = points("nasprobe_disk_io_time_ratio", &pts);
    let rd = points("nasprobe_disk_read_bytes_per_second", &pts);
    let wr = points("nasprobe_disk_written_bytes_per_second", &pts);
    let aw = points("nasprobe_disk_await_seconds", &pts);
    let q = points("nasprobe_disk_queue_length", &pts);
    let mut checked = 0;
    for d in &s.disks {
        let name = hello.disks[d.disk as usize].name.as_str();
        let v = |p: &[(Option<String>, f64)]| {
            p.iter().find(|x| x.0.as_deref() == Some(name)).unwrap().1
        };
        let line = format!(
            "disk {name:<8} util {:5.1}%  read {:7.2} MB/s  write {:7.2} MB/s  await {:6.2} ms  queue {:.2}",
            v(&util) * 100.0,
            v(&rd) / 1e6,
            v(&wr) / 1e6,
            v(&aw) * 1000.0,
            v(&q)
        );
        assert!(text.contains(&line), "{line}\nnot in\n{text}");
        checked += 1;
    }
    assert_eq!(checked, 8);
    assert!(text.contains("disk sdb      util 100.0%"), "{text}");

    for (cpu, busy) in points("nasprobe_cpu_busy_ratio", &pts) {
        let want = format!("cpu{} {:3.0}%", cpu.unwrap(), busy * 100.0);
        assert!(text.contains(&want), "{want}\nnot in\n{text}");
    }
    for (name, cores) in points("nasprobe_process_cpu_ratio", &pts) {
        let name = name.unwrap();
        let row = text
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name.as_str()))
            .unwrap_or_else(|| panic!("{name} not in\n{text}"));
        let cpu: f64 = row.split_whitespace().nth(4).unwrap().parse().unwrap();
        assert_eq!(
            format!("{cpu:.1}"),
            format!("{:.1}", cores * 100.0),
            "{row}"
        );
    }
    let rx = points("nasprobe_network_receive_bytes_per_second", &pts);
    let tx = points("nasprobe_network_transmit_bytes_per_second", &pts);
    let nu = points("nasprobe_network_utilization_ratio", &pts);
    for n in &s.nics {
        let name = hello.nics[n.nic as usize].name.as_str();
        let v = |p: &[(Option<String>, f64)]| {
            p.iter().find(|x| x.0.as_deref() == Some(name)).unwrap().1
        };
        let head = format!(
            "nic  {name:<8} rx {:7.2} MB/s  tx {:7.2} MB/s",
            v(&rx) / 1e6,
            v(&tx) / 1e6
        );
        let tail = format!("({:.1}% of link)", v(&nu) * 100.0);
        let line = text
            .lines()
            .find(|l| l.starts_with(&head))
            .unwrap_or_else(|| {
                panic!("{head}\nnot in\n{text}");
            });
        assert!(line.ends_with(&tail), "{line} vs {tail}");
    }
    // eth0: unknown duplex judged full: max(rx, tx) / 125 MB/s, not (rx + tx).
    let eth0 = nu
        .iter()
        .find(|x| x.0.as_deref() == Some("eth0"))
        .unwrap()
        .1;
    let secs = f64::from(s.interval_us) / 1e6;
    let want = s.nics[0].rx_bytes.max(s.nics[0].tx_bytes) as f64 / secs / 125e6;
    assert!((eth0 - want).abs() < 1e-12, "{eth0} vs {want}");
}
