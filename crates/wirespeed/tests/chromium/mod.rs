//! Loads an HTML report in headless Chromium (Debian's `chromium`), reads
//! back what the page's self-check script wrote into the DOM, and takes a
//! screenshot of the whole page to prove the charts are drawn.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// Width of the browser window: a laptop's.
pub const WIDTH: u32 = 1280;

/// What the browser saw: the dumped DOM and its log on stderr.
pub struct Loaded {
    /// The DOM after the page's scripts ran.
    pub dom: String,
    /// Chromium's log (console messages and script errors).
    pub log: String,
}

fn browser(test: &str) -> Option<&'static str> {
    let found = ["chromium", "chromium-browser"].into_iter().find(|b| {
        Command::new(b)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    });
    let why = "chromium is not installed (apt-get install chromium)";
    wirespeed_testkit::require(
        found.is_some(),
        why,
        &format!("the browser check of {test}"),
    );
    found
}

/// Runs headless Chromium on `html` at `WIDTH` x `height` with `extra`
/// arguments; returns (stdout, stderr).
fn chromium(bin: &str, html: &Path, height: u32, extra: &[String]) -> (String, String) {
    let profile = html.with_extension("chromium-profile");
    let out = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            "--enable-logging=stderr",
            "--v=0",
            &format!("--window-size={WIDTH},{height}"),
            &format!("--user-data-dir={}", profile.display()),
        ])
        .args(extra)
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("run chromium");
    let _ = std::fs::remove_dir_all(&profile);
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Loads `html` headless; None (with a note) when chromium is not installed.
pub fn load(html: &Path, test: &str) -> Option<Loaded> {
    let bin = browser(test)?;
    let (dom, log) = chromium(bin, html, 900, &["--dump-dom".to_string()]);
    Some(Loaded { dom, log })
}

/// One chart's plot area on the page, in CSS pixels.
#[derive(Debug, Clone, PartialEq)]
pub struct Region {
    /// The chart's kind (`data-chart`).
    pub kind: String,
    /// Left, top, width, height.
    pub rect: (u32, u32, u32, u32),
}

/// What the page's self-check wrote.
#[derive(Debug)]
pub struct SelfCheck {
    /// Charts on the page.
    pub charts: usize,
    /// Charts that drew every mark they announce.
    pub with_data: usize,
    /// Where each chart's plot area is.
    pub regions: Vec<Region>,
    /// Height of the whole page.
    pub height: u32,
    /// The smallest chart text on screen, in CSS pixels (its font size
    /// times its chart's scale); None without chart text.
    pub min_font: Option<f64>,
}

fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    tag.split(&format!("{name}=\"")).nth(1)?.split('"').next()
}

/// Asserts the page loaded without script errors and that every one of its
/// `expect` charts drew the marks it announces; returns the self-check.
pub fn assert_every_chart_has_data(html: &Path, expect: usize, test: &str) -> Option<SelfCheck> {
    let l = load(html, test)?;
    let check = l
        .dom
        .split("id=\"selfcheck\"")
        .nth(1)
        .map(|s| s.split('>').next().unwrap_or(""))
        .unwrap_or_else(|| panic!("no #selfcheck in the DOM:\n{}", l.dom));
    // Chromium may order attributes differently; look for each one.
    assert!(
        check.contains(&format!("data-charts=\"{expect}\"")),
        "charts: {check}"
    );
    assert!(
        check.contains(&format!("data-charts-with-data=\"{expect}\"")),
        "charts with data: {check}"
    );
    assert!(!check.contains("data-errors"), "script errors: {check}");
    for bad in ["Uncaught", "CONSOLE(", "ERR_FILE_NOT_FOUND", "net::ERR"] {
        assert!(!l.log.contains(bad), "browser log has {bad:?}:\n{}", l.log);
    }
    let regions = attr(check, "data-regions")
        .unwrap_or("")
        .split_whitespace()
        .map(|r| {
            let (kind, nums) = r.split_once(':').expect("kind:x,y,w,h");
            let v: Vec<u32> = nums
                .split(',')
                .map(|x| x.parse::<i64>().expect("a number").max(0) as u32)
                .collect();
            Region {
                kind: kind.to_string(),
                rect: (v[0], v[1], v[2], v[3]),
            }
        })
        .collect::<Vec<_>>();
    assert_eq!(regions.len(), expect, "regions: {check}");
    Some(SelfCheck {
        charts: expect,
        with_data: expect,
        regions,
        height: attr(check, "data-height")
            .and_then(|h| h.parse().ok())
            .expect("data-height"),
        min_font: attr(check, "data-min-font").and_then(|f| f.parse().ok()),
    })
}

/// A decoded screenshot: RGB pixels, row by row.
pub struct Shot {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// 3 bytes per pixel.
    pub rgb: Vec<u8>,
}

impl Shot {
    /// The pixel at (x, y).
    pub fn at(&self, x: u32, y: u32) -> (u8, u8, u8) {
        let i = ((y * self.width + x) * 3) as usize;
        (self.rgb[i], self.rgb[i + 1], self.rgb[i + 2])
    }

    /// Pixels inside `rect` that differ from the white background, and
    /// those of them in colour (the data: grid, axes and text are grey).
    pub fn ink(&self, rect: (u32, u32, u32, u32)) -> (usize, usize) {
        let (x0, y0, w, h) = rect;
        let (mut drawn, mut coloured) = (0, 0);
        for y in y0..(y0 + h).min(self.height) {
            for x in x0..(x0 + w).min(self.width) {
                let (r, g, b) = self.at(x, y);
                let (hi, lo) = (r.max(g).max(b), r.min(g).min(b));
                if lo < 240 {
                    drawn += 1;
                }
                if hi - lo > 60 {
                    coloured += 1;
                }
            }
        }
        (drawn, coloured)
    }
}

/// Decodes a PNG into RGB.
pub fn decode_png(path: &Path) -> Shot {
    let file = std::fs::File::open(path).expect("open screenshot");
    let mut dec = png::Decoder::new(std::io::BufReader::new(file));
    dec.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = dec.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("a sane size")];
    let info = reader.next_frame(&mut buf).expect("a frame");
    let (color, _) = reader.output_color_type();
    let px = match color {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => panic!("unexpected screenshot colour type {other:?}"),
    };
    let rgb = buf[..info.buffer_size()]
        .chunks_exact(px)
        .flat_map(|p| [p[0], p[1], p[2]])
        .collect();
    Shot {
        width: info.width,
        height: info.height,
        rgb,
    }
}

/// Screenshots the whole page (at `WIDTH` and its full height) into `png`.
pub fn screenshot(html: &Path, height: u32, png: &Path, test: &str) -> Option<Shot> {
    let bin = browser(test)?;
    chromium(
        bin,
        html,
        height.clamp(200, 16000),
        &[format!("--screenshot={}", png.display())],
    );
    Some(decode_png(png))
}

/// The full check: every chart has data, no script error, and in a
/// screenshot of the whole page every chart's plot area holds drawn,
/// coloured pixels (the lines and bars, not only grid and text). Returns
/// the self-check and the screenshot for further looks.
pub fn assert_charts_drawn(html: &Path, expect: usize, test: &str) -> Option<(SelfCheck, Shot)> {
    let check = assert_every_chart_has_data(html, expect, test)?;
    let png = html.with_extension("png");
    let shot = screenshot(html, check.height, &png, test)?;
    assert_eq!(shot.width, WIDTH, "{test}: screenshot width");
    assert!(
        shot.height >= check.height.min(16000),
        "{test}: screenshot {} px high, page {}",
        shot.height,
        check.height
    );
    for r in &check.regions {
        let (w, h) = (r.rect.2, r.rect.3);
        assert!(w > 100 && h > 20, "{test}: {} chart is {w}x{h} px", r.kind);
        let (drawn, coloured) = shot.ink(r.rect);
        assert!(
            drawn > 200 && coloured > 60,
            "{test}: the {} chart at {:?} looks blank: {drawn} drawn pixels, {coloured} coloured",
            r.kind,
            r.rect
        );
    }
    Some((check, shot))
}
