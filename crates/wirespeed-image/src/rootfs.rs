//! The image's one layer: the binary, the files a non-root user needs, and,
//! for a dynamically linked binary, its loader and shared libraries copied
//! from this host, as a deterministic tar (fixed mtimes, sorted entries,
//! owner root except the user's home).

use crate::{BinaryError, ImageError};
use goblin::elf::Elf;
use goblin::elf::header::{EM_AARCH64, EM_PPC64, EM_RISCV, EM_S390, EM_X86_64, ET_DYN, ET_EXEC};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The binary's path in the image.
pub const BINARY_PATH: &str = "/usr/local/bin/wirespeed";
/// The unprivileged user (and group) the image runs as.
pub const USER_ID: u64 = 65532;
/// That user's name.
pub const USER_NAME: &str = "wirespeed";

/// One entry of the layer: a directory or a regular file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Permission bits (with sticky bit for /tmp).
    pub mode: u32,
    /// Owner uid and gid.
    pub owner: u64,
    /// The file's bytes; `None` for a directory.
    pub data: Option<Vec<u8>>,
}

/// The layer's entries by path (relative, no leading '/'), in tar order.
#[derive(Debug, Default)]
pub struct Tree(BTreeMap<String, Entry>);

impl Tree {
    /// The tree of an image running `binary` (its bytes) with `libraries`
    /// (absolute path in the image, bytes).
    pub fn new(binary: Vec<u8>, libraries: Vec<(String, Vec<u8>)>) -> Tree {
        let mut t = Tree::default();
        t.file(BINARY_PATH, 0o755, binary);
        t.file("/etc/passwd", 0o644, passwd().into_bytes());
        t.file("/etc/group", 0o644, group().into_bytes());
        t.dir("/tmp", 0o1777, 0);
        t.dir(&format!("/home/{USER_NAME}"), 0o755, USER_ID);
        for (path, data) in libraries {
            t.file(&path, 0o755, data);
        }
        t
    }

    /// The entries, sorted by path (the tests read the tree back).
    #[cfg(test)]
    pub fn entries(&self) -> impl Iterator<Item = (&String, &Entry)> {
        self.0.iter()
    }

    fn file(&mut self, path: &str, mode: u32, data: Vec<u8>) {
        let p = self.parents(path);
        let owner = 0;
        self.0.insert(
            p,
            Entry {
                mode,
                owner,
                data: Some(data),
            },
        );
    }

    fn dir(&mut self, path: &str, mode: u32, owner: u64) {
        let p = self.parents(path);
        self.0.insert(
            p,
            Entry {
                mode,
                owner,
                data: None,
            },
        );
    }

    /// Adds `path`'s missing parent directories (0755, root) and returns
    /// `path` without its leading '/'.
    fn parents(&mut self, path: &str) -> String {
        let rel = path.trim_start_matches('/');
        let mut at = 0;
        while let Some(i) = rel[at..].find('/') {
            at += i;
            let dir = Entry {
                mode: 0o755,
                owner: 0,
                data: None,
            };
            self.0.entry(rel[..at].to_string()).or_insert(dir);
            at += 1;
        }
        rel.to_string()
    }

    /// The layer as an uncompressed tar.
    pub fn tar(&self) -> Result<Vec<u8>, ImageError> {
        let enc = |e: std::io::Error| ImageError::Encode {
            what: "the layer tar",
            why: e.into(),
        };
        let mut b = tar::Builder::new(Vec::new());
        for (path, e) in &self.0 {
            let mut h = tar::Header::new_ustar();
            h.set_mode(e.mode);
            h.set_uid(e.owner);
            h.set_gid(e.owner);
            h.set_mtime(0);
            let data: &[u8] = e.data.as_deref().unwrap_or_default();
            h.set_size(data.len() as u64);
            if e.data.is_some() {
                h.set_entry_type(tar::EntryType::Regular);
                b.append_data(&mut h, path, data).map_err(enc)?;
            } else {
                h.set_entry_type(tar::EntryType::Directory);
                b.append_data(&mut h, format!("{path}/"), data)
                    .map_err(enc)?;
            }
        }
        b.into_inner().map_err(enc)
    }
}

fn passwd() -> String {
    format!(
        "root:x:0:0:root:/root:/sbin/nologin\n\
         {USER_NAME}:x:{USER_ID}:{USER_ID}:{USER_NAME}:/home/{USER_NAME}:/sbin/nologin\n"
    )
}

fn group() -> String {
    format!("root:x:0:\n{USER_NAME}:x:{USER_ID}:\n")
}

/// The ELF machine and Debian multiarch triplet of the architecture this
/// crate is built for; `None` where it is not one of the common ones.
fn target() -> Option<(u16, &'static str)> {
    Some(match std::env::consts::ARCH {
        "x86_64" => (EM_X86_64, "x86_64-linux-gnu"),
        "aarch64" => (EM_AARCH64, "aarch64-linux-gnu"),
        "riscv64" => (EM_RISCV, "riscv64-linux-gnu"),
        "powerpc64" => (EM_PPC64, "powerpc64le-linux-gnu"),
        "s390x" => (EM_S390, "s390x-linux-gnu"),
        _ => return None,
    })
}

/// Checks `bytes` is a Linux executable for this build's architecture and
/// returns its loader and the shared libraries it needs, as (path in the
/// image, bytes) read from this host; none for a static binary.
pub fn libraries(path: &Path, bytes: &[u8]) -> Result<Vec<(String, Vec<u8>)>, ImageError> {
    let bad = |why: BinaryError| ImageError::Binary {
        path: path.to_path_buf(),
        why,
    };
    let elf = Elf::parse(bytes).map_err(|e| bad(BinaryError::NotElf(e)))?;
    check_elf(&elf).map_err(bad)?;
    let Some(interp) = elf.interpreter else {
        return Ok(Vec::new());
    };
    let mut out = vec![(interp.to_string(), read(Path::new(interp))?)];
    // The loader is already loaded under its own name: never load it twice.
    let loader = Path::new(interp).file_name().and_then(|n| n.to_str());
    let mut seen: BTreeSet<String> = loader.into_iter().map(String::from).collect();
    let mut queue: Vec<String> = elf.libraries.iter().map(|s| s.to_string()).collect();
    while let Some(name) = queue.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        let (found, data) = find_library(&name).map_err(bad)?;
        if let Ok(lib) = Elf::parse(&data) {
            queue.extend(lib.libraries.iter().map(|s| s.to_string()));
        }
        out.push((found.to_string_lossy().into_owned(), data));
    }
    Ok(out)
}

fn check_elf(elf: &Elf) -> Result<(), BinaryError> {
    if !matches!(elf.header.e_type, ET_EXEC | ET_DYN) || elf.entry == 0 {
        return Err(BinaryError::NotExecutable);
    }
    match target() {
        Some((machine, _)) if machine != elf.header.e_machine => Err(BinaryError::Machine {
            machine: elf.header.e_machine,
            arch: std::env::consts::ARCH,
        }),
        _ => Ok(()),
    }
}

/// Where the loader looks without an ld.so.cache: the multiarch and the
/// plain library directories.
fn library_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some((_, triplet)) = target() {
        dirs.push(PathBuf::from(format!("/lib/{triplet}")));
        dirs.push(PathBuf::from(format!("/usr/lib/{triplet}")));
    }
    dirs.extend(["/lib64", "/usr/lib64", "/lib", "/usr/lib"].map(PathBuf::from));
    dirs
}

fn find_library(name: &str) -> Result<(PathBuf, Vec<u8>), BinaryError> {
    if name.contains('/') {
        return Err(BinaryError::LibraryByPath(name.to_string()));
    }
    let dirs = library_dirs();
    for d in &dirs {
        let p = d.join(name);
        if p.is_file() {
            return match std::fs::read(&p) {
                Ok(data) => Ok((p, data)),
                Err(error) => Err(BinaryError::LibraryUnreadable { path: p, error }),
            };
        }
    }
    Err(BinaryError::LibraryMissing {
        name: name.to_string(),
        dirs,
    })
}

fn read(p: &Path) -> Result<Vec<u8>, ImageError> {
    std::fs::read(p).map_err(|error| ImageError::Read {
        path: p.to_path_buf(),
        error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents_come_first_and_only_home_is_the_users() {
        let t = Tree::new(
            b"bin".to_vec(),
            vec![("/lib64/ld.so".into(), b"ld".to_vec())],
        );
        let paths: Vec<&str> = t.entries().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                "etc",
                "etc/group",
                "etc/passwd",
                "home",
                "home/wirespeed",
                "lib64",
                "lib64/ld.so",
                "tmp",
                "usr",
                "usr/local",
                "usr/local/bin",
                "usr/local/bin/wirespeed"
            ]
        );
        for (p, e) in t.entries() {
            let want = if p == "home/wirespeed" { USER_ID } else { 0 };
            assert_eq!(e.owner, want, "{p}");
        }
        assert_eq!(t.0["tmp"].mode, 0o1777);
        assert_eq!(t.0["usr/local/bin/wirespeed"].mode, 0o755);
    }

    #[test]
    fn the_tar_is_the_same_every_time() {
        let t = || Tree::new(b"bin".to_vec(), Vec::new()).tar().unwrap();
        assert_eq!(t(), t());
    }

    #[test]
    fn a_non_elf_binary_is_refused_with_what_to_do() {
        let e = libraries(Path::new("x.sh"), b"#!/bin/sh\n").unwrap_err();
        assert!(e.to_string().contains("--binary"), "{e}");
    }

    #[test]
    #[cfg(target_env = "gnu")]
    fn the_running_test_binary_brings_its_loader_and_libc() {
        let exe = std::env::current_exe().unwrap();
        let libs = libraries(&exe, &std::fs::read(&exe).unwrap()).unwrap();
        let names: Vec<&str> = libs.iter().map(|(p, _)| p.as_str()).collect();
        assert!(names.iter().any(|p| p.ends_with("/libc.so.6")), "{names:?}");
        assert!(names.iter().any(|p| p.contains("ld-linux")), "{names:?}");
    }
}
