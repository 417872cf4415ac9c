//! One control connection: the handshake (preamble, hello, challenge,
//! auth, welcome), then its specs one by one, and the error answers.

use super::admission::Registry;
use super::answer::{fail, fail_read, secs};
use super::config::ServerConfig;
use super::run::run_test;
use super::table::Ticket;
use crate::error::EngineError;
use crate::proto::{
    CONTROL_MAGIC, MAX_FRAME, MIN_PROTOCOL_VERSION, Msg, PROTOCOL_VERSION, auth_verify, hex,
    printable, random_bytes, read_exact_until, read_msg_until, write_msg_until,
};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::time::Instant;
use wirespeed_types::protocol::{Speaks, agree};

/// What a handshake deadline error says: `what` was due by the end of
/// the handshake.
fn within(cfg: &ServerConfig, what: &str) -> String {
    format!(
        "{what} (the handshake must end within {})",
        secs(cfg.handshake_timeout)
    )
}

/// Serves one control connection: the handshake by the handshake
/// deadline, then the client's tests one by one.
pub(super) fn handle_control(
    stream: TcpStream,
    peer: SocketAddr,
    cfg: &ServerConfig,
    reg: &Registry,
    ticket: &mut Ticket,
) -> Result<(), EngineError> {
    stream.set_nodelay(true).ok();
    let hs = Instant::now() + cfg.handshake_timeout;
    let Some((client, version)) = read_hello(&stream, cfg, hs, ticket)? else {
        return Ok(());
    };
    authenticate(&stream, cfg, hs, ticket, version)?;
    serve_specs(&stream, peer, &client, cfg, reg)
}

/// Reads the client's preamble and hello by `hs`; returns its name and
/// the protocol version both speak, or None for a connection that closed
/// at once.
fn read_hello(
    stream: &TcpStream,
    cfg: &ServerConfig,
    hs: Instant,
    ticket: &Ticket,
) -> Result<Option<(String, u32)>, EngineError> {
    let fd = stream.as_fd();
    let mut magic = [0u8; 4];
    match read_exact_until(fd, &mut magic, hs, &within(cfg, "the client's preamble")) {
        Ok(()) => {}
        // A port probe (a health check, a scan) that closes at once is
        // not worth a log line.
        Err(EngineError::Io { error, .. })
            if error.kind() == std::io::ErrorKind::UnexpectedEof && !ticket.displaced() =>
        {
            return Ok(None);
        }
        Err(e) => return Err(fail_read(stream, e, ticket.displaced())),
    }
    if magic != CONTROL_MAGIC {
        return Err(fail(
            stream,
            "protocol",
            "not a wirespeed control connection (bad preamble)".into(),
        ));
    }
    let hello = read_msg_until(
        fd,
        MAX_HANDSHAKE_FRAME,
        hs,
        &within(cfg, "the client's hello"),
    )
    .map_err(|e| fail_read(stream, e, ticket.displaced()))?;
    match hello {
        Msg::Hello {
            version,
            min_version,
            client,
        } => {
            let client = printable(&client, MAX_CLIENT_NAME);
            let theirs = Speaks {
                role: "client".into(),
                release: client.clone(),
                min: min_version.unwrap_or(version).min(version),
                max: version,
            };
            let ours = Speaks::this("server", MIN_PROTOCOL_VERSION, PROTOCOL_VERSION);
            match agree("control protocol", &ours, &theirs) {
                Ok(v) => Ok(Some((client, v))),
                Err(why) => Err(fail(stream, "version", why.to_string())),
            }
        }
        other => Err(fail(
            stream,
            "protocol",
            format!("expected hello, got {}", other.kind()),
        )),
    }
}

/// Challenges the client (stating the protocol `version` chosen and this
/// release), checks its answer against the key and takes a connection
/// slot, by `hs`; then welcomes it.
fn authenticate(
    stream: &TcpStream,
    cfg: &ServerConfig,
    hs: Instant,
    ticket: &mut Ticket,
    version: u32,
) -> Result<(), EngineError> {
    let fd = stream.as_fd();
    let nonce: [u8; 32] = random_bytes()?;
    write_msg_until(
        fd,
        &Msg::Challenge {
            nonce: hex(&nonce),
            auth_required: cfg.key.is_some(),
            version: Some(version),
            server: Some(wirespeed_types::protocol::RELEASE_NAME.into()),
        },
        hs,
    )?;
    let mac = match read_msg_until(
        fd,
        MAX_HANDSHAKE_FRAME,
        hs,
        &within(cfg, "the client's auth"),
    ) {
        Ok(Msg::Auth { mac }) => mac,
        Ok(other) => {
            return Err(fail(
                stream,
                "protocol",
                format!("expected auth, got {}", other.kind()),
            ));
        }
        Err(e) => return Err(fail_read(stream, e, ticket.displaced())),
    };
    if let Some(key) = &cfg.key {
        let ok = mac.as_deref().is_some_and(|m| auth_verify(key, &nonce, m));
        if !ok {
            return Err(fail(
                stream,
                "auth",
                "wrong or missing key: use the server's --key-file".into(),
            ));
        }
    }
    if let Err(why) = ticket.authenticate(cfg.max_connections) {
        return Err(fail(stream, "busy", why.to_string()));
    }
    write_msg_until(
        fd,
        &Msg::Welcome {
            limits: cfg.limits.clone(),
        },
        hs,
    )
}

/// Runs each test the client specifies until it closes the connection.
fn serve_specs(
    stream: &TcpStream,
    peer: SocketAddr,
    client: &str,
    cfg: &ServerConfig,
    reg: &Registry,
) -> Result<(), EngineError> {
    let fd = stream.as_fd();
    loop {
        let what = format!(
            "the client's next spec (--idle-timeout {})",
            secs(cfg.idle_timeout)
        );
        let m = read_msg_until(fd, MAX_FRAME, Instant::now() + cfg.idle_timeout, &what)
            .map_err(|e| fail_read(stream, e, false));
        let m = match m {
            Ok(m) => m,
            Err(EngineError::Io { error, .. })
                if error.kind() == std::io::ErrorKind::UnexpectedEof =>
            {
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        match m {
            Msg::Spec { spec } => run_test(stream, peer, client, *spec, cfg, reg)?,
            other => {
                return Err(fail(
                    stream,
                    "protocol",
                    format!("expected spec, got {}", other.kind()),
                ));
            }
        }
    }
}

/// Largest hello or auth frame, bytes: before authentication a client
/// gets no more buffer than those need (the 1 MiB of a spec comes after).
const MAX_HANDSHAKE_FRAME: usize = 4096;

/// Most characters of a client's name kept for the log.
const MAX_CLIENT_NAME: usize = 64;
