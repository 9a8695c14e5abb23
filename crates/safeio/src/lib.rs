//! File I/O that cannot harm the host, for every path a user gives rondpoint (it often runs as
//! root):
//!
//! - [`read_text`]: input from regular files only (a FIFO, device, socket or directory is
//!   refused before it is opened, so nothing blocks or grows without end), at most a size cap
//!   per kind of input, checked as UTF-8; errors name the path, never echo its content.
//! - [`write_replacing`]: an output replaced whole and atomically (a state file): written to a
//!   uniquely named temporary file in the same directory (O_EXCL), synced, renamed over the
//!   destination; a destination that exists and is not a regular file (a device, FIFO,
//!   socket, directory or symbolic link) is refused, and nothing else is ever removed.
//! - [`create_staged`]: an output written as it goes (a recording), the same way: under the
//!   temporary name until [`Staged::commit`] renames it; removed if never committed.

#![forbid(unsafe_code)]
// Parses bytes from outside (files, the kernel): no indexing that could panic on them.
#![deny(clippy::indexing_slicing)]

use std::fs::OpenOptions;
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// Kinds of input, each with its size cap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    /// A policy configuration (`--config`).
    PolicyConfig,
    /// A simulator scenario or machine preset.
    Scenario,
    /// An interconnect description (`topo --interconnect`).
    Interconnect,
    /// A recording (`replay`).
    Recording,
    /// A file a policy parameter names (`oaas.curve`: a MAPI-to-gap curve `calibrate` wrote).
    PolicyFile,
}

impl InputKind {
    /// The most bytes accepted.
    pub fn limit(self) -> u64 {
        match self {
            // A few KiB in practice; 1 MiB leaves room for generated files.
            InputKind::PolicyConfig | InputKind::Interconnect | InputKind::PolicyFile => 1 << 20,
            // The largest preset is under 10 KiB; generated scenarios of many applications
            // stay well under 16 MiB.
            InputKind::Scenario => 16 << 20,
            // Recordings of long runs with every sample are large: 4 GiB, beyond which a
            // replay would not fit in a workstation's memory anyway.
            InputKind::Recording => 4 << 30,
        }
    }

    fn name(self) -> &'static str {
        match self {
            InputKind::PolicyConfig => "policy configuration",
            InputKind::Scenario => "scenario",
            InputKind::Interconnect => "interconnect file",
            InputKind::Recording => "recording",
            InputKind::PolicyFile => "policy parameter file",
        }
    }
}

/// Why a file could not be used.
#[derive(Debug, Error)]
pub enum SafeIoError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{}: is a {kind}, not a regular file", path.display())]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("{}: larger than the {limit_mib} MiB a {what} may be", path.display())]
    TooLarge {
        path: PathBuf,
        what: &'static str,
        limit_mib: u64,
    },
    #[error("{}: not UTF-8 text (byte {offset})", path.display())]
    NotText { path: PathBuf, offset: usize },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> SafeIoError + '_ {
    move |source| SafeIoError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// What kind of file a non-regular file is, for messages.
fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        "directory"
    } else if t.is_symlink() {
        "symbolic link"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_socket() {
        "socket"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else {
        "special file"
    }
}

/// Opens an input path: a regular file (links to one are followed: an input is only read),
/// opened without blocking so that a FIFO swapped in after the check cannot hang the read,
/// and checked again once open.
pub fn open_input(path: &Path, kind: InputKind) -> Result<impl Read + use<>, SafeIoError> {
    let meta = std::fs::metadata(path).map_err(io_err(path))?;
    if !meta.is_file() {
        return Err(SafeIoError::NotRegular {
            path: path.to_path_buf(),
            kind: kind_of(&meta),
        });
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(io_err(path))?;
    let meta = file.metadata().map_err(io_err(path))?;
    if !meta.is_file() {
        return Err(SafeIoError::NotRegular {
            path: path.to_path_buf(),
            kind: kind_of(&meta),
        });
    }
    if meta.len() > kind.limit() {
        return Err(too_large(path, kind));
    }
    // The size may grow while it is read: the cap holds all the same.
    Ok(file.take(kind.limit() + 1))
}

fn too_large(path: &Path, kind: InputKind) -> SafeIoError {
    SafeIoError::TooLarge {
        path: path.to_path_buf(),
        what: kind.name(),
        limit_mib: kind.limit() >> 20,
    }
}

/// Reads an input file whole as UTF-8 text, within its kind's cap.
pub fn read_text(path: &Path, kind: InputKind) -> Result<String, SafeIoError> {
    let mut bytes = Vec::new();
    open_input(path, kind)?
        .read_to_end(&mut bytes)
        .map_err(io_err(path))?;
    if bytes.len() as u64 > kind.limit() {
        return Err(too_large(path, kind));
    }
    String::from_utf8(bytes).map_err(|e| SafeIoError::NotText {
        path: path.to_path_buf(),
        offset: e.utf8_error().valid_up_to(),
    })
}

/// Refuses a destination that exists and is not a regular file (a link is not followed).
fn check_destination(path: &Path) -> Result<(), SafeIoError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if !meta.file_type().is_file() => Err(SafeIoError::NotRegular {
            path: path.to_path_buf(),
            kind: kind_of(&meta),
        }),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err(path)(e)),
    }
}

/// Replaces `path` with `bytes` atomically (see the module documentation).
pub fn write_replacing(path: &Path, bytes: &[u8]) -> Result<(), SafeIoError> {
    let mut staged = create_staged(path)?;
    staged.write_all(bytes).map_err(io_err(path))?;
    staged.commit()
}

/// An output written as it goes under a unique temporary name (`.rondpoint-*.tmp`, created
/// with O_EXCL) in its destination's directory; [`Staged::commit`] syncs it and renames it over
/// the destination. Writes are buffered. Dropped without a commit (an error on the way), it is
/// removed: the destination is never left half-written.
#[derive(Debug)]
pub struct Staged {
    tmp: io::BufWriter<tempfile::NamedTempFile>,
    dest: PathBuf,
}

/// Starts writing `path` (see [`Staged`]); a destination that exists and is not a regular
/// file is refused at once.
pub fn create_staged(path: &Path) -> Result<Staged, SafeIoError> {
    check_destination(path)?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let tmp = tempfile::Builder::new()
        .prefix(".rondpoint-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(io_err(path))?;
    Ok(Staged {
        tmp: io::BufWriter::new(tmp),
        dest: path.to_path_buf(),
    })
}

impl Staged {
    /// Syncs what was written and renames it over the destination.
    pub fn commit(self) -> Result<(), SafeIoError> {
        let dest = self.dest;
        let tmp = self
            .tmp
            .into_inner()
            .map_err(|e| io_err(&dest)(e.into_error()))?;
        tmp.as_file().sync_all().map_err(io_err(&dest))?;
        // Checked again just before the rename, which replaces a name, never what it points to.
        check_destination(&dest)?;
        tmp.persist(&dest).map_err(|e| io_err(&dest)(e.error))?;
        Ok(())
    }
}

impl Write for Staged {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tmp.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.tmp.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(status.success());
    }

    #[test]
    fn inputs_must_be_regular_files_within_their_cap() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        let started = std::time::Instant::now();
        let err = read_text(&fifo, InputKind::Scenario)
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("is a FIFO, not a regular file"), "{err}");
        assert!(started.elapsed().as_secs() < 1);
        let err = read_text(Path::new("/dev/zero"), InputKind::Scenario)
            .unwrap_err()
            .to_string();
        assert_eq!(err, "/dev/zero: is a character device, not a regular file");
        let err = read_text(dir.path(), InputKind::Scenario)
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("is a directory, not a regular file"), "{err}");
        let big = dir.path().join("big.toml");
        std::fs::write(&big, vec![b'#'; (1 << 20) + 1]).unwrap();
        let err = read_text(&big, InputKind::PolicyConfig)
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with("larger than the 1 MiB a policy configuration may be"),
            "{err}"
        );
        let bin = dir.path().join("bin.toml");
        std::fs::write(&bin, b"a = 1\n\xff\xfe").unwrap();
        let err = read_text(&bin, InputKind::PolicyConfig)
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("not UTF-8 text (byte 6)"), "{err}");
        // A link to a regular file is read.
        let ok = dir.path().join("ok.toml");
        std::fs::write(&ok, "a = 1\n").unwrap();
        symlink(&ok, dir.path().join("link.toml")).unwrap();
        assert_eq!(
            read_text(&dir.path().join("link.toml"), InputKind::PolicyConfig).unwrap(),
            "a = 1\n"
        );
    }

    #[test]
    fn outputs_replace_regular_files_only_and_remove_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state.json");
        // An unrelated file with the old temporary name is left alone.
        let unrelated = dir.path().join("state.tmp");
        std::fs::write(&unrelated, "mine").unwrap();
        write_replacing(&state, b"one").unwrap();
        write_replacing(&state, b"two").unwrap();
        assert_eq!(std::fs::read_to_string(&state).unwrap(), "two");
        assert_eq!(std::fs::read_to_string(&unrelated).unwrap(), "mine");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 2, "no temporary file left behind");
        // A FIFO, a directory and a symbolic link are refused and left as they were.
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        let err = write_replacing(&fifo, b"x").unwrap_err().to_string();
        assert!(err.ends_with("is a FIFO, not a regular file"), "{err}");
        assert!(
            std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo()
        );
        let link = dir.path().join("link");
        symlink(&unrelated, &link).unwrap();
        let err = write_replacing(&link, b"x").unwrap_err().to_string();
        assert!(
            err.ends_with("is a symbolic link, not a regular file"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&unrelated).unwrap(), "mine");
        let err = create_staged(&link).unwrap_err().to_string();
        assert!(
            err.ends_with("is a symbolic link, not a regular file"),
            "{err}"
        );
        let err = write_replacing(dir.path(), b"x").unwrap_err().to_string();
        assert!(err.ends_with("is a directory, not a regular file"), "{err}");
        // A staged file appears whole at the commit; dropped before, it leaves nothing.
        let rec = dir.path().join("rec.jsonl");
        let mut staged = create_staged(&rec).unwrap();
        staged.write_all(b"line\n").unwrap();
        assert!(!rec.exists());
        staged.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&rec).unwrap(), "line\n");
        let other = dir.path().join("other.jsonl");
        create_staged(&other).unwrap().write_all(b"half").unwrap();
        assert!(!other.exists());
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            !names.iter().any(|n| n.starts_with(".rondpoint-")),
            "{names:?}"
        );
    }
}
