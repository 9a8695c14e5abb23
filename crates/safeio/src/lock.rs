//! Exclusive locks between rondpoints, on files in a directory every rondpoint of the machine
//! uses: one per managed process (the live backend's), one per output a running rondpoint
//! writes again and again (a daemon's state file, a live recording), so that two cannot
//! manage one process or write one file. Locks are `flock(2)` locks: the kernel drops them
//! when their holder exits, however it exits. A lock file holds its holder's pid (for
//! messages); a holder that removes its lock file leaves any rondpoint that opened it before
//! to find the name points elsewhere and try again, so that two cannot hold one lock.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The outcome of [`try_lock`].
#[derive(Debug)]
pub enum Lock {
    /// Taken: held until the file is closed.
    Ours(File),
    /// Held by another rondpoint, with its pid when it wrote one.
    Theirs(Option<i32>),
}

/// Takes the lock at `path` (created if needed, never through a symbolic link), or says who
/// holds it.
pub fn try_lock(path: &Path) -> io::Result<Lock> {
    loop {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)?;
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(e) if e == rustix::io::Errno::WOULDBLOCK => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                return Ok(Lock::Theirs(text.trim().parse().ok()));
            }
            Err(e) => return Err(e.into()),
        }
        let locked = file.metadata()?;
        match std::fs::symlink_metadata(path) {
            Ok(named) if named.ino() == locked.ino() && named.dev() == locked.dev() => {
                file.set_len(0)?;
                file.rewind()?;
                write!(file, "{}", std::process::id())?;
                return Ok(Lock::Ours(file));
            }
            // Removed (or replaced) by its last holder after it was opened: again.
            _ => continue,
        }
    }
}

/// The lock file, in `dir`, of the output `path`: named after the directory `path` is in (its
/// device and inode, whatever name reaches it) and a hash of its file name, so that two
/// spellings of one file (`./state.json`, a link to its directory) take one lock.
pub fn output_lock_path(dir: &Path, path: &Path) -> io::Result<PathBuf> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let meta = std::fs::metadata(parent)?;
    let name = path.file_name().map_or(&[][..], |n| n.as_encoded_bytes());
    Ok(dir.join(format!(
        "out-{:x}-{:x}-{:016x}.lock",
        meta.dev(),
        meta.ino(),
        fnv1a(name)
    )))
}

/// FNV-1a, 64 bits: a hash that is the same in every build of rondpoint (std's `Hasher`s
/// promise no such thing, and two versions of rondpoint must agree on a lock's name).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_holder_at_a_time_and_the_name_follows_the_file_not_its_spelling() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        let a = output_lock_path(dir.path(), &out.join("state.json")).unwrap();
        let b = output_lock_path(dir.path(), &out.join(".").join("state.json")).unwrap();
        assert_eq!(a, b);
        let other = output_lock_path(dir.path(), &out.join("state2.json")).unwrap();
        assert_ne!(a, other);
        let Lock::Ours(held) = try_lock(&a).unwrap() else {
            panic!("free lock not taken");
        };
        let me = i32::try_from(std::process::id()).ok();
        assert!(matches!(try_lock(&b).unwrap(), Lock::Theirs(pid) if pid == me));
        drop(held);
        // Free once closed; a test of this process that forks at that moment holds a copy of
        // the descriptor until its exec closes it (O_CLOEXEC), so the lock may stay a moment.
        let again = (0..100).map(|_| try_lock(&b).unwrap()).find(|l| {
            matches!(l, Lock::Ours(_)) || {
                std::thread::sleep(std::time::Duration::from_millis(10));
                false
            }
        });
        assert!(again.is_some());
        // The well-known FNV-1a test vector.
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
