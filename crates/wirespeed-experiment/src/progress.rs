//! Where the library's progress and warning lines go. The library never
//! writes to the terminal itself: the binary installs a sink (standard
//! error, today) with [`set_sink`]; without one, lines are dropped.

use std::sync::OnceLock;

type Sink = Box<dyn Fn(&str) + Send + Sync>;

static SINK: OnceLock<Sink> = OnceLock::new();

/// Sends every later progress line to `f`; only the first call counts.
pub fn set_sink(f: impl Fn(&str) + Send + Sync + 'static) {
    let _ = SINK.set(Box::new(f));
}

/// One line of progress or warning ("building the lab for cell x").
pub(crate) fn say(line: impl AsRef<str>) {
    if let Some(f) = SINK.get() {
        f(line.as_ref());
    }
}
