//! Every `unsafe` of the collector, behind safe functions: the signal pipe, the aligned,
//! uncached file I/O of `ladder` and free space. The rest of the crate denies `unsafe_code`.

pub(crate) mod fs;
pub mod signals;
