pub fn run(
    _c: &crate::cli::Common,
    _l: bool,
    _d: Option<std::time::Duration>,
    _p: bool,
    _h: &[String],
) -> anyhow::Result<()> {
    todo!()
}
