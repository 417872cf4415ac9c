//! Reading a `--key-file` as ssh reads a private key.

use crate::error::EngineError;

/// A key read from a `--key-file`, with a warning for its owner to see.
#[derive(Debug)]
pub struct KeyFile {
    /// The key: the file's bytes with surrounding whitespace trimmed.
    pub key: Vec<u8>,
    /// Set when the file is readable by every user (to print on stderr).
    pub warning: Option<String>,
}

/// Largest key file read, bytes: a key is a short secret, and `/dev/zero`
/// must not be read for ever.
pub const MAX_KEY_FILE: u64 = 4096;

/// Reads a key file as ssh reads a private key: a regular file writable
/// by group or others is refused (anyone could replace the key), one
/// readable by everyone is taken with a warning; at most `MAX_KEY_FILE`
/// bytes are read, and the key must hold at least 16.
pub fn read_key_file(path: &std::path::Path) -> Result<KeyFile, EngineError> {
    use std::io::Read;
    use std::os::unix::fs::PermissionsExt;
    let p = path.display();
    let f =
        std::fs::File::open(path).map_err(|e| EngineError::io(format!("open key file {p}"), e))?;
    let meta = f
        .metadata()
        .map_err(|e| EngineError::io(format!("read key file {p}"), e))?;
    let mut warning = None;
    if meta.is_file() {
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o022 != 0 {
            let who = if mode & 0o002 != 0 {
                "every user"
            } else {
                "its group"
            };
            return Err(EngineError::Key(format!(
                "{p} is writable by {who} (mode {mode:03o}), so anyone there could replace the key: run `chmod 600 {p}`"
            )));
        }
        if mode & 0o004 != 0 {
            warning = Some(format!(
                "key file {p} is readable by every user (mode {mode:03o}): run `chmod 600 {p}`"
            ));
        }
    }
    let mut raw = Vec::new();
    f.take(MAX_KEY_FILE + 1)
        .read_to_end(&mut raw)
        .map_err(|e| EngineError::io(format!("read key file {p}"), e))?;
    if raw.len() as u64 > MAX_KEY_FILE {
        return Err(EngineError::Key(format!(
            "{p} holds more than {MAX_KEY_FILE} bytes: is it the key? (make one with `head -c 32 /dev/urandom | base64 > key`)"
        )));
    }
    let key: Vec<u8> = raw.trim_ascii().to_vec();
    if key.len() < 16 {
        return Err(EngineError::Key(format!(
            "{p} holds {} bytes; use at least 16 (e.g. `head -c 32 /dev/urandom | base64 > key`)",
            key.len()
        )));
    }
    Ok(KeyFile { key, warning })
}
