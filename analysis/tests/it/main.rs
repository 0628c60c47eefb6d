//! The analysis crate's integration tests, one binary: the golden outputs over testkit's
//! scenarios, copies of several of them in one recording, the HTML report, the verdict cases, the
//! workspace's layering rule and the design map's paths.

mod copies;
mod docs_map;
mod golden;
mod html;
mod html_scenario;
mod layers;
mod verdict;
