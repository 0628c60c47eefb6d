//! The analysis crate's integration tests, one binary: the golden outputs over testkit's
//! scenarios, the HTML report, the verdict cases and the workspace's layering rule.

mod golden;
mod html;
mod html_scenario;
mod layers;
mod verdict;
