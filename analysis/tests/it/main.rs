//! The analysis crate's integration tests, one binary: the golden outputs over testkit's
//! scenarios, copies of several of them in one recording, the HTML report, the verdict cases and the workspace's layering rule.

mod copies;
mod golden;
mod html;
mod html_scenario;
mod layers;
mod verdict;
