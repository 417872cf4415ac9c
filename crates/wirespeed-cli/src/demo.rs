//! The flags of `wirespeed demo`.

/// Options of `wirespeed demo`.
#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Seconds each test measures.
    #[arg(long, default_value_t = 2.0)]
    pub duration: f64,
    /// Use loopback even as root.
    #[arg(long)]
    pub loopback: bool,
    /// Where the HTML report goes.
    #[arg(long, default_value = "report.html")]
    pub out: std::path::PathBuf,
}
