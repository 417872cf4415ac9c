//! `wirespeed k8s image build` against real tools: Debian's registry
//! (docker-registry, the reference OCI distribution server) for `--push`,
//! and, as root where containerd and runc are installed, a throwaway
//! containerd that imports the `--output` layout and runs the image. Also:
//! `k8s run` refuses to start without `--image`, before any cluster I/O.

use crate::common;

use common::{bin, temp_dir};
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const REGISTRY: &str = "/usr/bin/docker-registry";
/// The largest compressed image the project accepts.
const MAX_IMAGE: usize = 25 * 1024 * 1024;

/// A child process and its directory: the process is killed and the
/// directory removed on drop, on success and on failure alike.
struct Guard {
    child: Option<Child>,
    dir: PathBuf,
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().unwrap().port()
}

/// GET over HTTP/1.0 (no chunked replies): status and body.
fn get(addr: &str, path: &str, accept: &str) -> std::io::Result<(u16, Vec<u8>)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        s,
        "GET {path} HTTP/1.0\r\nHost: {addr}\r\nAccept: {accept}\r\n\r\n"
    )?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf)?;
    let end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no end of headers"))?;
    let head = String::from_utf8_lossy(&buf[..end]);
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Ok((status, buf[end + 4..].to_vec()))
}

/// Starts docker-registry on a free loopback port with storage in a temp
/// dir and waits until GET /v2/ answers 200; `None` (skip) when it is not
/// installed, except under CI=true where that fails the test.
fn start_registry(test: &str) -> Option<(Guard, String)> {
    let why = format!("{REGISTRY} missing (apt-get install -y docker-registry)");
    if !wirespeed_testkit::require(Path::new(REGISTRY).exists(), &why, test) {
        return None;
    }
    let dir = temp_dir(test);
    let addr = format!("127.0.0.1:{}", free_port());
    let config = dir.join("registry.yml");
    std::fs::write(
        &config,
        format!(
            "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: {addr}\n",
            dir.join("data").display()
        ),
    )
    .unwrap();
    let mut g = Guard { child: None, dir };
    let log = std::fs::File::create(g.dir.join("registry.log")).unwrap();
    let child = Command::new(REGISTRY)
        .arg("serve")
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start docker-registry");
    g.child = Some(child);
    let t0 = Instant::now();
    while !matches!(get(&addr, "/v2/", "*/*"), Ok((200, _))) {
        let log = std::fs::read_to_string(g.dir.join("registry.log")).unwrap_or_default();
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "registry not up: {log}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    Some((g, addr))
}

fn build(args: &[&str]) -> Output {
    let out = Command::new(bin())
        .args(["k8s", "image", "build"])
        .args(args)
        .output()
        .expect("run wirespeed k8s image build");
    assert!(
        out.status.success(),
        "k8s image build {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn sha256(data: &[u8]) -> String {
    let d = Sha256::digest(data);
    format!(
        "sha256:{}",
        d.iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

/// The paths in a gzip'd tar.
fn layer_paths(gz: &[u8]) -> Vec<String> {
    let mut t = tar::Archive::new(flate2::read::GzDecoder::new(gz));
    t.entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned())
        .collect()
}

fn json(data: &[u8]) -> serde_json::Value {
    serde_json::from_slice(data).expect("JSON")
}

#[test]
fn image_push_reads_back_from_a_real_registry_with_a_stable_digest() {
    let test = "image_push";
    let Some((_registry, addr)) = start_registry(test) else {
        return;
    };
    let reference = format!("{addr}/wirespeed:test");
    let push = ["--push", &reference, "--plain-http"];
    let first = stdout(&build(&push));
    let second = stdout(&build(&push));
    let (name, digest) = first.split_once('@').expect("REF@sha256:... on stdout");
    assert_eq!(name, reference);
    assert_eq!(first, second, "the same binary gives the same digest");

    let mt = "application/vnd.oci.image.manifest.v1+json";
    let (st, manifest) = get(&addr, "/v2/wirespeed/manifests/test", mt).unwrap();
    assert_eq!(st, 200);
    assert_eq!(
        sha256(&manifest),
        digest,
        "printed digest is the manifest's"
    );
    let m = json(&manifest);
    assert_eq!(m["mediaType"], mt);
    let blob = |d: &serde_json::Value| {
        let (st, b) = get(
            &addr,
            &format!("/v2/wirespeed/blobs/{}", d.as_str().unwrap()),
            "*/*",
        )
        .unwrap();
        assert_eq!(st, 200, "blob {d}");
        b
    };
    let config = json(&blob(&m["config"]["digest"]));
    assert_eq!(config["config"]["User"], "65532:65532");
    assert_eq!(
        config["config"]["Entrypoint"][0],
        "/usr/local/bin/wirespeed"
    );
    assert_eq!(config["os"], "linux");
    let layers = m["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 1);
    let layer = blob(&layers[0]["digest"]);
    let paths = layer_paths(&layer);
    assert!(
        paths.iter().any(|p| p == "usr/local/bin/wirespeed"),
        "{paths:?}"
    );
    assert!(paths.iter().any(|p| p == "etc/passwd"), "{paths:?}");
    let total = manifest.len() + layer.len() + m["config"]["size"].as_u64().unwrap() as usize;
    assert!(
        total < MAX_IMAGE,
        "image is {total} bytes, over {MAX_IMAGE}"
    );
}

#[test]
fn image_output_is_an_oci_layout_whose_index_points_at_the_manifest() {
    let dir = temp_dir("image_layout");
    let _g = Guard {
        child: None,
        dir: dir.clone(),
    };
    let file = dir.join("wirespeed.oci.tar");
    let out = build(&[
        "--output",
        file.to_str().unwrap(),
        "--name",
        "localhost/ws:t",
    ]);
    let digest = stdout(&out);
    assert!(digest.starts_with("sha256:"), "{digest}");
    let mut files = std::collections::BTreeMap::new();
    let mut t = tar::Archive::new(std::fs::File::open(&file).unwrap());
    for e in t.entries().unwrap() {
        let mut e = e.unwrap();
        let p = e.path().unwrap().to_string_lossy().into_owned();
        let mut data = Vec::new();
        e.read_to_end(&mut data).unwrap();
        files.insert(p, data);
    }
    assert_eq!(json(&files["oci-layout"])["imageLayoutVersion"], "1.0.0");
    let index = json(&files["index.json"]);
    let m = &index["manifests"][0];
    assert_eq!(m["digest"], digest.as_str());
    assert_eq!(
        m["annotations"]["org.opencontainers.image.ref.name"],
        "localhost/ws:t"
    );
    let blob = |d: &str| &files[&format!("blobs/sha256/{}", &d["sha256:".len()..])];
    let manifest = blob(&digest);
    assert_eq!(sha256(manifest), digest);
    let layer = json(manifest)["layers"][0]["digest"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(sha256(blob(&layer)), layer);
}

/// A containerd of its own (socket, root and state in a temp dir, no CRI).
fn start_containerd(test: &str) -> Option<(Guard, String)> {
    let tools = ["containerd", "runc", "ctr"];
    if !wirespeed_testkit::need_root(test)
        || !tools
            .iter()
            .all(|t| wirespeed_testkit::need_tool(t, "containerd runc", test))
    {
        return None;
    }
    let dir = temp_dir(test);
    let sock = dir.join("containerd.sock").display().to_string();
    let config = dir.join("config.toml");
    std::fs::write(
        &config,
        format!(
            "version = 2\nroot = \"{d}/root\"\nstate = \"{d}/state\"\n\
             disabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n\
             [grpc]\n  address = \"{sock}\"\n[ttrpc]\n  address = \"{sock}.ttrpc\"\n",
            d = dir.display()
        ),
    )
    .unwrap();
    let log = std::fs::File::create(dir.join("containerd.log")).unwrap();
    let child = Command::new("containerd")
        .arg("-c")
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start containerd");
    let g = Guard {
        child: Some(child),
        dir,
    };
    let t0 = Instant::now();
    while !ctr(&sock, &["version"]).status.success() {
        assert!(t0.elapsed() < Duration::from_secs(20), "containerd not up");
        std::thread::sleep(Duration::from_millis(200));
    }
    Some((g, sock))
}

fn ctr(sock: &str, args: &[&str]) -> Output {
    let ns = format!("ws-image-test-{}", std::process::id());
    Command::new("ctr")
        .args(["-a", sock, "-n", &ns])
        .args(args)
        .output()
        .expect("run ctr")
}

#[test]
fn image_runs_in_containerd_without_a_base_image() {
    let test = "image_containerd";
    let Some((g, sock)) = start_containerd(test) else {
        return;
    };
    let file = g.dir.join("wirespeed.oci.tar");
    let name = "localhost/wirespeed:containerd-test";
    build(&["--output", file.to_str().unwrap(), "--name", name]);
    let import = ctr(&sock, &["images", "import", file.to_str().unwrap()]);
    let text = |o: &Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };
    assert!(import.status.success(), "import: {}", text(&import));
    let id = format!("ws-image-test-{}", std::process::id());
    // The image's own entrypoint and cmd: `wirespeed agent --help`, as 65532.
    let run = ctr(&sock, &["run", "--rm", name, &id]);
    assert!(run.status.success(), "run: {}", text(&run));
    assert!(
        text(&run).contains("Usage: wirespeed agent"),
        "{}",
        text(&run)
    );
}

#[test]
fn run_without_image_fails_before_touching_any_cluster() {
    let out = Command::new(bin())
        .args(["k8s", "run", "--network", "pod", "-d", "1s"])
        .env("KUBECONFIG", "/nonexistent/wirespeed-test-kubeconfig")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains("--image"), "{err}");
    assert!(
        err.contains("wirespeed k8s image build --push"),
        "says how to get one: {err}"
    );
    assert!(
        !err.to_lowercase().contains("kubeconfig"),
        "read no kubeconfig: {err}"
    );
}

#[test]
fn manifests_without_image_name_the_placeholder_and_say_so() {
    let out = Command::new(bin())
        .args(["k8s", "manifests", "--network", "pod"])
        .output()
        .unwrap();
    let (o, e) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{e}");
    let placeholder = format!("image: REPLACE-ME/wirespeed:{}", env!("CARGO_PKG_VERSION"));
    assert!(o.contains(&placeholder), "{o}");
    assert!(
        e.contains("placeholder") && e.contains("k8s image build --push"),
        "{e}"
    );
}
