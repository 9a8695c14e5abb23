//! File I/O that cannot harm the host, for every path a user gives rondpoint (it often runs as
//! root):
//!
//! - [`read_text`]: input from regular files only (a FIFO, device, socket or directory is
//!   refused before it is opened, so nothing blocks or grows without end), at most a size cap
//!   per kind of input, checked as UTF-8; errors name the path, never echo its content.
//! - [`write_replacing`]: an output replaced whole and atomically (a state file): written to a
//!   uniquely named temporary file in the same directory (O_EXCL), synced, renamed over the
//!   destination; a destination that exists and is not a regular file (a device, FIFO,
//!   socket, directory or symbolic link) is refused, and so is a regular file that is not an
//!   output of the same kind ([`OutputKind`]) unless the user said `--force`; a replaced file
//!   keeps its mode (and owner, as root); nothing else is ever removed.
//! - [`create_staged`]: an output written as it goes (a recording), the same way: under the
//!   temporary name until [`Staged::commit`] renames it; removed if never committed.
//! - [`read_system`]: a file of the kernel's trees (sysfs, procfs, cgroupfs, or a copy of
//!   them given with `--sysfs-root` / `--cgroup`), under the same rules as a user's input: a
//!   FIFO or device in its place is refused, never opened to block, and at most
//!   [`SYSTEM_FILE_LIMIT`] bytes are read. Errors stay `io::Error`s, so that callers still tell
//!   a task that is gone (`ENOENT`, `ESRCH`) from a failure.
//! - [`lock`]: locks between rondpoints on the processes they manage and the outputs they
//!   keep writing.

#![forbid(unsafe_code)]
// Parses bytes from outside (files, the kernel): no indexing that could panic on them.
#![deny(clippy::indexing_slicing)]

pub mod lock;

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
    /// A daemon's state file (`rondpoint top --state`).
    StateFile,
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
            // A few tens of KiB: the view keeps at most 100 processes.
            InputKind::StateFile => 16 << 20,
        }
    }

    fn name(self) -> &'static str {
        match self {
            InputKind::PolicyConfig => "policy configuration",
            InputKind::Scenario => "scenario",
            InputKind::Interconnect => "interconnect file",
            InputKind::Recording => "recording",
            InputKind::PolicyFile => "policy parameter file",
            InputKind::StateFile => "state file",
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
    #[error(
        "{}: exists and is not a rondpoint {what}; give another name, or --force to replace it",
        path.display()
    )]
    NotOurs { path: PathBuf, what: &'static str },
    #[error(
        "{}: would grow to about {} MiB, and its file system has {} MiB free (rondpoint \
         leaves the last {} MiB to others)",
        path.display(),
        expected >> 20,
        free >> 20,
        reserve >> 20
    )]
    NoRoom {
        path: PathBuf,
        expected: u64,
        free: u64,
        reserve: u64,
    },
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

/// Most bytes read from one file of the kernel's trees: a `cgroup.procs` of a million
/// processes is under 8 MiB, the largest `numa_maps` of a process with a million mappings
/// about 100 MiB; 256 MiB keeps rondpoint's own memory bounded whatever is put in their place.
pub const SYSTEM_FILE_LIMIT: u64 = 256 << 20;

/// Reads a file of the kernel's trees whole (see the module documentation). A non-regular file
/// or one over [`SYSTEM_FILE_LIMIT`] is an `InvalidData` error that says so.
pub fn read_system(path: &Path) -> io::Result<Vec<u8>> {
    let refuse = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(refuse(format!(
            "is a {}, not a regular file",
            kind_of(&meta)
        )));
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(refuse(format!(
            "is a {}, not a regular file",
            kind_of(&meta)
        )));
    }
    let too_large = || {
        refuse(format!(
            "larger than the {} MiB a file of the kernel's trees may be",
            SYSTEM_FILE_LIMIT >> 20
        ))
    };
    if meta.len() > SYSTEM_FILE_LIMIT {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    file.take(SYSTEM_FILE_LIMIT + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > SYSTEM_FILE_LIMIT {
        return Err(too_large());
    }
    Ok(bytes)
}

/// [`read_system`] as text; bytes that are not UTF-8 are replaced (the kernel writes ASCII,
/// but a process's name in its maps or stat may be anything).
pub fn read_system_text(path: &Path) -> io::Result<String> {
    read_system(path).map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// Kinds of output, each known by how its text begins: rondpoint replaces a file only if it
/// wrote it (the same kind of output), unless told to ([`Replace::Any`], `--force`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputKind {
    /// A recording (`record -o`, `--record`): JSON lines from a header line.
    Recording,
    /// The daemon's state file (`--state-file`): pretty JSON from its schema version.
    StateFile,
    /// A MAPI-to-gap curve (`calibrate -o`): TOML under its comment line.
    GapCurve,
    /// A manual page (`man --dir`): roff under its comment line.
    ManPage,
    /// An SVG chart (`sim --plot`): SVG under its comment line.
    SvgChart,
    /// A PNG chart (`sim --plot`): a PNG whose first chunk after the header is the text
    /// "Software: rondpoint".
    PngChart,
}

impl OutputKind {
    /// How a file of this kind begins: these bytes at this offset (a PNG's own signature
    /// and header chunk, whose size fields vary, come first).
    fn signature(self) -> (usize, &'static [u8]) {
        match self {
            OutputKind::Recording => (0, br#"{"kind":"header""#),
            OutputKind::StateFile => (0, b"{\n  \"schema_version\""),
            OutputKind::GapCurve => (0, b"# MAPI-to-gap curve"),
            OutputKind::ManPage => (0, b".\\\" rondpoint manual page"),
            OutputKind::SvgChart => (0, SVG_CHART_SIGNATURE.as_bytes()),
            // 8 bytes of PNG signature, 25 of IHDR chunk, then a tEXt chunk of 18 bytes.
            OutputKind::PngChart => (33, b"\0\0\0\x12tEXtSoftware\0rondpoint"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            OutputKind::Recording => "recording",
            OutputKind::StateFile => "state file",
            OutputKind::GapCurve => "MAPI-to-gap curve",
            OutputKind::ManPage => "manual page",
            OutputKind::SvgChart => "SVG chart",
            OutputKind::PngChart => "PNG chart",
        }
    }
}

/// The comment line an SVG chart begins with ([`OutputKind::SvgChart`]).
pub const SVG_CHART_SIGNATURE: &str = "<!-- rondpoint chart -->";

/// What an output may replace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Replace {
    /// Only a regular file that is an output of the same kind (or nothing).
    Ours(OutputKind),
    /// Any regular file (`--force`).
    Any,
}

/// Refuses a destination that exists and is not a regular file (a link is not followed), or,
/// with [`Replace::Ours`], a regular file that does not begin as an output of that kind.
fn check_destination(path: &Path, replace: Replace) -> Result<(), SafeIoError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_err(path)(e)),
    };
    if !meta.file_type().is_file() {
        return Err(SafeIoError::NotRegular {
            path: path.to_path_buf(),
            kind: kind_of(&meta),
        });
    }
    let Replace::Ours(kind) = replace else {
        return Ok(());
    };
    let (offset, signature) = kind.signature();
    let len = offset + signature.len();
    let mut head = Vec::with_capacity(len);
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)
        .and_then(|f| f.take(len as u64).read_to_end(&mut head))
        .map_err(io_err(path))?;
    if head.get(offset..) != Some(signature) {
        return Err(SafeIoError::NotOurs {
            path: path.to_path_buf(),
            what: kind.name(),
        });
    }
    Ok(())
}

/// Replaces `path` with `bytes` atomically (see the module documentation).
pub fn write_replacing(path: &Path, bytes: &[u8], replace: Replace) -> Result<(), SafeIoError> {
    let mut staged = create_staged(path, replace)?;
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
    written: u64,
}

/// Starts writing `path` (see [`Staged`]); a destination that exists and is not a regular
/// file is refused at once.
pub fn create_staged(path: &Path, replace: Replace) -> Result<Staged, SafeIoError> {
    check_destination(path, replace)?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    // A new file gets the mode the user's umask gives (0666 masked, as `>` in a shell would;
    // tempfile's own default is 0600 whatever the umask). A replaced file keeps its mode.
    let tmp = tempfile::Builder::new()
        .prefix(".rondpoint-")
        .suffix(".tmp")
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(io_err(path))?;
    Ok(Staged {
        tmp: io::BufWriter::new(tmp),
        dest: path.to_path_buf(),
        written: 0,
    })
}

impl Staged {
    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Refuses to go on when the output would not fit: `expected` is the size it should reach
    /// (`None`: unknown, so only what is written now counts). The file system keeps the last
    /// 5% of its size (at most 1 GiB) for everyone else, so that a recording cannot fill a
    /// disk a machine needs.
    pub fn check_room(&self, expected: Option<u64>) -> Result<(), SafeIoError> {
        let stat = rustix::fs::fstatvfs(self.tmp.get_ref().as_file())
            .map_err(|e| io_err(&self.dest)(e.into()))?;
        let unit = stat.f_frsize.max(1);
        let free = stat.f_bavail.saturating_mul(unit);
        let reserve = (stat.f_blocks.saturating_mul(unit) / 20).min(1 << 30);
        let buffered = self.tmp.buffer().len() as u64;
        let more = expected.map_or(buffered, |e| e.saturating_sub(self.written - buffered));
        if more.saturating_add(reserve) > free {
            return Err(SafeIoError::NoRoom {
                path: self.dest.clone(),
                expected: expected.unwrap_or(self.written),
                free,
                reserve,
            });
        }
        Ok(())
    }

    /// Syncs what was written and renames it over the destination.
    pub fn commit(self) -> Result<(), SafeIoError> {
        let dest = self.dest;
        let tmp = self
            .tmp
            .into_inner()
            .map_err(|e| io_err(&dest)(e.into_error()))?;
        tmp.as_file().sync_all().map_err(io_err(&dest))?;
        // Checked again just before the rename, which replaces a name, never what it points to.
        check_destination(&dest, Replace::Any)?;
        keep_owner_and_mode(&dest, tmp.as_file()).map_err(io_err(&dest))?;
        tmp.persist(&dest).map_err(|e| io_err(&dest)(e.error))?;
        Ok(())
    }
}

/// A replaced file keeps its owner and mode (a state file made readable to a monitoring user
/// stays readable); the owner only where rondpoint may set it (root), as `cp -p` does.
fn keep_owner_and_mode(dest: &Path, tmp: &std::fs::File) -> io::Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let meta = match std::fs::symlink_metadata(dest) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    tmp.set_permissions(std::fs::Permissions::from_mode(meta.mode() & 0o7777))?;
    match std::os::unix::fs::fchown(tmp, Some(meta.uid()), Some(meta.gid())) {
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => Ok(()),
        other => other,
    }
}

impl Write for Staged {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.tmp.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.tmp.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_file_swapped_for_a_fifo_a_device_or_a_huge_file_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("distance");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let started = std::time::Instant::now();
        let e = read_system(&fifo).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert_eq!(e.to_string(), "is a FIFO, not a regular file");
        let e = read_system(Path::new("/dev/zero")).unwrap_err();
        assert_eq!(e.to_string(), "is a character device, not a regular file");
        let sparse = dir.path().join("cgroup.procs");
        std::fs::File::create(&sparse)
            .unwrap()
            .set_len(3 << 30)
            .unwrap();
        let e = read_system(&sparse).unwrap_err();
        assert!(e.to_string().starts_with("larger than the 256 MiB"), "{e}");
        assert!(started.elapsed().as_secs() < 2);
        // Absent stays NotFound, for callers that tell a gone task from a failure.
        let e = read_system(&dir.path().join("none")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        std::fs::write(dir.path().join("ok"), "0-3\n").unwrap();
        assert_eq!(read_system(&dir.path().join("ok")).unwrap(), b"0-3\n");
    }
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
        write_replacing(&state, b"one", Replace::Any).unwrap();
        write_replacing(&state, b"two", Replace::Any).unwrap();
        assert_eq!(std::fs::read_to_string(&state).unwrap(), "two");
        assert_eq!(std::fs::read_to_string(&unrelated).unwrap(), "mine");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 2, "no temporary file left behind");
        // A FIFO, a directory and a symbolic link are refused and left as they were.
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        let err = write_replacing(&fifo, b"x", Replace::Any)
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("is a FIFO, not a regular file"), "{err}");
        assert!(
            std::fs::symlink_metadata(&fifo)
                .unwrap()
                .file_type()
                .is_fifo()
        );
        let link = dir.path().join("link");
        symlink(&unrelated, &link).unwrap();
        let err = write_replacing(&link, b"x", Replace::Any)
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with("is a symbolic link, not a regular file"),
            "{err}"
        );
        assert_eq!(std::fs::read_to_string(&unrelated).unwrap(), "mine");
        let err = create_staged(&link, Replace::Any).unwrap_err().to_string();
        assert!(
            err.ends_with("is a symbolic link, not a regular file"),
            "{err}"
        );
        let err = write_replacing(dir.path(), b"x", Replace::Any)
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("is a directory, not a regular file"), "{err}");
        // A staged file appears whole at the commit; dropped before, it leaves nothing.
        let rec = dir.path().join("rec.jsonl");
        let mut staged = create_staged(&rec, Replace::Ours(OutputKind::Recording)).unwrap();
        staged.write_all(b"line\n").unwrap();
        assert!(!rec.exists());
        staged.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&rec).unwrap(), "line\n");
        let other = dir.path().join("other.jsonl");
        create_staged(&other, Replace::Ours(OutputKind::Recording))
            .unwrap()
            .write_all(b"half")
            .unwrap();
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

    #[test]
    fn a_new_output_has_the_mode_the_umask_gives() {
        use std::os::unix::fs::PermissionsExt;
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let umask = status
            .lines()
            .find_map(|l| l.strip_prefix("Umask:"))
            .map(|m| u32::from_str_radix(m.trim(), 8).unwrap())
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.json");
        write_replacing(&path, b"{}", Replace::Any).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o666 & !umask, "umask {umask:o}");
    }

    #[test]
    fn an_output_replaces_only_its_own_kind_and_keeps_the_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let passwd = dir.path().join("passwd");
        std::fs::write(&passwd, "root:x:0:0:root:/root:/bin/bash\n").unwrap();
        let state = Replace::Ours(OutputKind::StateFile);
        let err = write_replacing(&passwd, b"{}", state)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("exists and is not a rondpoint state file"),
            "{err}"
        );
        assert!(err.contains("--force"), "{err}");
        assert!(
            std::fs::read_to_string(&passwd)
                .unwrap()
                .starts_with("root:")
        );
        // A recording is not a state file either; a state file is.
        let rec = dir.path().join("rec.jsonl");
        std::fs::write(&rec, "{\"kind\":\"header\",\"version\":1}\n").unwrap();
        assert!(write_replacing(&rec, b"{}", state).is_err());
        let own = dir.path().join("state.json");
        std::fs::write(&own, "{\n  \"schema_version\": 1\n}").unwrap();
        std::fs::set_permissions(&own, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_replacing(&own, b"{\n  \"schema_version\": 2\n}", state).unwrap();
        let mode = std::fs::metadata(&own).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644, "the replaced file keeps its mode");
        // An empty file is not ours either; --force replaces anything regular.
        let empty = dir.path().join("empty");
        std::fs::write(&empty, "").unwrap();
        assert!(create_staged(&empty, Replace::Ours(OutputKind::GapCurve)).is_err());
        write_replacing(&passwd, b"forced", Replace::Any).unwrap();
        assert_eq!(std::fs::read_to_string(&passwd).unwrap(), "forced");
    }

    #[test]
    fn a_chart_replaces_only_a_chart_of_its_format_that_rondpoint_wrote() {
        let dir = tempfile::tempdir().unwrap();
        let svg = Replace::Ours(OutputKind::SvgChart);
        let png = Replace::Ours(OutputKind::PngChart);
        let other_svg = dir.path().join("logo.svg");
        std::fs::write(&other_svg, "<svg xmlns=\"http://www.w3.org/2000/svg\"/>").unwrap();
        assert!(write_replacing(&other_svg, b"x", svg).is_err());
        let own_svg = dir.path().join("chart.svg");
        std::fs::write(&own_svg, format!("{SVG_CHART_SIGNATURE}\n<svg/>")).unwrap();
        write_replacing(&own_svg, b"new", svg).unwrap();
        assert_eq!(std::fs::read(&own_svg).unwrap(), b"new");
        // A PNG: signature, IHDR (13 bytes of data), then rondpoint's tEXt chunk, or not.
        let mut head = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        head.extend([0u8; 17]);
        let mut own = head.clone();
        own.extend(b"\0\0\0\x12tEXtSoftware\0rondpoint\0\0\0\0");
        let mut other = head;
        other.extend(b"\0\0\0\x12tEXtSoftware\0gimp-2.10\0\0\0\0");
        let (own_png, other_png) = (dir.path().join("a.png"), dir.path().join("b.png"));
        std::fs::write(&own_png, &own).unwrap();
        std::fs::write(&other_png, &other).unwrap();
        write_replacing(&own_png, b"new", png).unwrap();
        assert!(write_replacing(&other_png, b"new", png).is_err());
        assert_eq!(std::fs::read(&other_png).unwrap(), other);
        // Neither kind replaces the other.
        std::fs::write(&own_png, &own).unwrap();
        assert!(write_replacing(&own_png, b"new", svg).is_err());
    }
}
