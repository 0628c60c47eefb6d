//! Decoded samples and the rates the views (`watch`, the exporters) read from them: the formulas
//! live in the analysis crate ([`nasprobe_analysis::rates`]) so that the live views and the
//! report compute every figure the same way.

pub use nasprobe_analysis::rates::*;
