//! Fuzz bodies for the control protocol (wirespeed-engine's `proto`): the
//! frame decoder and message parser, and the data-connection preamble.
//! Shared by the `control` and `preamble` fuzz targets and by
//! crates/wirespeed-engine/tests/fuzz_corpus.rs, which replays the corpus.

use std::io::Write;
use std::net::Shutdown;
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use wirespeed_engine::proto::{
    DATA_PREAMBLE_LEN, FrameReader, MAX_FRAME, Msg, auth_verify, encode, parse_data_preamble,
    printable, unhex,
};
use wirespeed_engine::testing::check_report;
use wirespeed_types::{Limits, TestSpec};

/// Bytes written to the socket at a time: frames end up split across
/// reads at every offset.
const CHUNK: usize = 1000;

/// A byte stream as a peer would send it on a control connection: read
/// with the server's [`FrameReader`] over a real socket, chunk by chunk,
/// and every message it yields put through what the server and the
/// client do with it (validate a spec and derive its roster, check a
/// report, parse hex, escape text, encode again).
pub fn control(data: &[u8]) {
    let (mut tx, rx) = UnixStream::pair().expect("socketpair");
    let fd = rx.as_fd();
    let mut reader = FrameReader::new(MAX_FRAME);
    let drain = |reader: &mut FrameReader| {
        loop {
            match reader.poll(fd, "fuzz input") {
                Ok(Some(m)) => message(m),
                Ok(None) => return true,
                Err(_) => return false,
            }
        }
    };
    for chunk in data.chunks(CHUNK) {
        tx.write_all(chunk).expect("write to socketpair");
        if !drain(&mut reader) {
            return;
        }
    }
    tx.shutdown(Shutdown::Write).expect("shutdown");
    drain(&mut reader);
}

/// What either side does with one decoded message.
fn message(m: Msg) {
    let _ = encode(&m);
    match m {
        Msg::Hello { client, .. } => drop(printable(&client, 64)),
        Msg::Challenge { nonce, .. } => drop(unhex(&nonce)),
        Msg::Auth { mac } => drop(auth_verify(b"key", &[0; 32], mac.as_deref().unwrap_or(""))),
        Msg::Welcome { limits } => drop(TestSpec::default().validate(&limits)),
        Msg::Spec { spec } => {
            if spec.validate(&Limits::default()).is_ok() {
                let _ = spec.summary();
                let _ = spec.total_threads();
                assert_eq!(spec.roster().len() as u64, spec.connections());
            }
        }
        Msg::Accepted { token, .. } => drop(unhex(&token)),
        Msg::Report { mut report } => drop(check_report(&mut report, &TestSpec::default())),
        Msg::Error { code, message } => drop((printable(&code, 32), printable(&message, 512))),
        Msg::Start | Msg::Started | Msg::Stop => {}
    }
}

/// A data connection's first bytes against a token: the first 16 bytes of
/// the input are the test's token, the rest is what the connection sent;
/// a flow id that parses is looked up in a default test's roster.
pub fn preamble(data: &[u8]) {
    let mut token = [0u8; 16];
    let n = data.len().min(16);
    token[..n].copy_from_slice(&data[..n]);
    let sent = &data[n..];
    let mut p = [0u8; DATA_PREAMBLE_LEN];
    if sent.len() < DATA_PREAMBLE_LEN {
        return;
    }
    p.copy_from_slice(&sent[..DATA_PREAMBLE_LEN]);
    if let Some(id) = parse_data_preamble(&p, &token) {
        assert_eq!(
            p[4..20],
            token,
            "a preamble with another token was accepted"
        );
        let _ = TestSpec::default().roster().get(id as usize);
    }
}
