//! Reading sysfs through a root prefix.
//!
//! Every path is relative to a root that plays the role of `/sys` (`--sysfs-root`). Errors name
//! the file and say what was wrong with it; a missing optional file is not an error.

mod node;
mod topology;

pub use node::NodeMeminfo;
pub use topology::{Discovery, discover};

use rondpoint_model::Pid;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// The nodes' directory, relative to the root.
const NODE_DIR: &str = "devices/system/node";

/// What went wrong reading a sysfs tree.
#[derive(Debug, Error)]
pub enum SysfsError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{}: {what}", path.display())]
    Malformed { path: PathBuf, what: String },
    #[error(
        "{} does not exist: either {} is not a sysfs tree, or this kernel was built without NUMA \
         support (CONFIG_NUMA)",
        path.display(),
        root.display()
    )]
    NoNodeDirectory { root: PathBuf, path: PathBuf },
    #[error("the topology read from {} is inconsistent: {source}", root.display())]
    Inconsistent {
        root: PathBuf,
        #[source]
        source: rondpoint_model::TopologyError,
    },
}

/// A sysfs tree rooted somewhere (normally `/sys`).
#[derive(Clone, Debug)]
pub struct SysfsRoot {
    root: PathBuf,
}

impl SysfsRoot {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Absolute path of a file under the root.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Reads a file that must exist.
    pub fn read(&self, rel: &str) -> Result<String, SysfsError> {
        let path = self.path(rel);
        read_text(&path)
    }

    /// Reads a file that may be absent (`Ok(None)` then).
    pub(crate) fn read_optional(&self, rel: &str) -> Result<Option<String>, SysfsError> {
        let path = self.path(rel);
        match rondpoint_safeio::read_system(&path) {
            Ok(bytes) => utf8(path, bytes).map(Some),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(SysfsError::Read { path, source }),
        }
    }

    /// Names of the entries of a directory that may be absent (empty then), sorted.
    pub(crate) fn list_optional(&self, rel: &str) -> Result<Vec<String>, SysfsError> {
        let path = self.path(rel);
        let entries = match fs::read_dir(&path) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(SysfsError::Read { path, source }),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| SysfsError::Read {
                path: path.clone(),
                source,
            })?;
            if let Some(name) = entry.file_name().to_str() {
                names.push(name.to_string());
            }
        }
        names.sort();
        Ok(names)
    }

    /// The processes a cgroup v2 directory lists in its `cgroup.procs` (a line that is not a
    /// pid is passed over). An absolute `dir` is read where it is, a relative one under the root.
    pub fn cgroup_procs(&self, dir: &Path) -> Result<Vec<Pid>, SysfsError> {
        let text = read_text(&self.root.join(dir).join("cgroup.procs"))?;
        let pids = text.lines().filter_map(|l| l.trim().parse::<i32>().ok());
        Ok(pids.map(Pid).collect())
    }

    /// A malformed-file error for `rel`.
    pub fn malformed(&self, rel: &str, what: impl Into<String>) -> SysfsError {
        SysfsError::Malformed {
            path: self.path(rel),
            what: what.into(),
        }
    }
}

fn read_text(path: &Path) -> Result<String, SysfsError> {
    let bytes = rondpoint_safeio::read_system(path).map_err(|source| SysfsError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    utf8(path.to_path_buf(), bytes)
}

fn utf8(path: PathBuf, bytes: Vec<u8>) -> Result<String, SysfsError> {
    String::from_utf8(bytes).map_err(|_| SysfsError::Malformed {
        path,
        what: "not UTF-8 text".into(),
    })
}
