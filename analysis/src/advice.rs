//! What would help, concretely, beyond the wall itself (the field's fixes): background
//! indexers and thumbnailers taking CPU during a transfer, a link in half duplex, MTUs that
//! differ between the two ends of the flow. Each is one "what would: ..." sentence.

use crate::series::HostSeries;
use crate::series::active_indices;
use crate::stats::median;
use crate::stats::pick;
use crate::vocab::{Flow, pct};

/// Indexers, thumbnailers and media scanners of NAS firmwares and desktops: they wake up when
/// files arrive and compete with the copy for the CPU.
const INDEXERS: &[&str] = &[
    "wdmcserverd",
    "wdphotodbmergerd",
    "wdnotifierd",
    "synoindexd",
    "synomediaparserd",
    "synothumbd",
    "synoelasticd",
    "synofoto-face-e",
    "mediaserver",
    "minidlnad",
    "tracker-miner-f",
    "baloo_file",
    "updatedb",
];

/// An indexer at or above this share of one core during the transfer is worth naming.
const INDEXER_MIN_CORE: f64 = 0.10;

/// The advice for `hosts` over the transfer's `range` (the flow's active period).
pub(crate) fn concrete(
    hosts: &[HostSeries],
    range: Option<(u64, u64)>,
    flow: Option<&Flow>,
) -> Vec<String> {
    let mut v = Vec::new();
    if flow.is_none() {
        return v;
    }
    for s in hosts {
        let idx = active_indices(s, range);
        let mut busy: Vec<(String, f64)> = s
            .procs
            .iter()
            .filter(|(name, _)| INDEXERS.contains(&name.as_str()))
            .filter_map(|(name, p)| {
                let c = median(&pick(&p.cores, &idx))?;
                (c >= INDEXER_MIN_CORE).then(|| (name.clone(), c))
            })
            .collect();
        busy.sort_by(|a, b| b.1.total_cmp(&a.1));
        if !busy.is_empty() {
            let list: Vec<String> = busy
                .iter()
                .map(|(n, c)| format!("`{n}` {} of a core", pct(*c)))
                .collect();
            v.push(format!(
                "what would: pausing the indexers during the copy: on {} {} (median during \
                 the transfer)",
                s.name,
                list.join(", ")
            ));
        }
    }
    let Some(f) = flow else {
        return v;
    };
    let end = |host: &Option<String>, dev: &Option<String>| {
        let s = hosts.iter().find(|s| Some(&s.name) == host.as_ref())?;
        let n = s.nics.get(dev.as_ref()?)?;
        Some((s, dev.as_ref()?.clone(), n))
    };
    let ends: Vec<_> = [end(&f.from, &f.from_device), end(&f.to, &f.to_device)]
        .into_iter()
        .flatten()
        .collect();
    for (s, dev, n) in &ends {
        let idx = active_indices(s, range);
        let known: Vec<bool> = idx
            .iter()
            .filter_map(|&i| n.full_duplex.get(i).copied())
            .collect();
        let half = known.iter().filter(|d| !**d).count();
        if !known.is_empty() && half * 2 > known.len() {
            v.push(format!(
                "what would: full duplex on {} {dev}: it negotiated half duplex, so sending and \
                 receiving take turns; check the switch port and autonegotiation (or the cable)",
                s.name
            ));
        }
    }
    if let [(a, da, na), (b, db, nb)] = ends.as_slice()
        && na.mtu > 0
        && nb.mtu > 0
        && na.mtu != nb.mtu
    {
        v.push(format!(
            "what would: the same MTU at both ends: {} {da} has {}, {} {db} has {}; jumbo frames \
             on one side only are fragmented or dropped on the way",
            a.name, na.mtu, b.name, nb.mtu
        ));
    }
    v
}
