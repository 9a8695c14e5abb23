//! Identifiers. Each is a newtype so a node number can never be passed where a CPU is expected.

use serde::{Deserialize, Serialize};
use std::fmt;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $inner:ty, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub $inner);

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }

        impl From<$inner> for $name {
            fn from(v: $inner) -> Self {
                Self(v)
            }
        }
    };
}

id_type!(
    /// A NUMA node as the kernel numbers it (`/sys/devices/system/node/nodeN`). Node numbers
    /// need not be contiguous; dense indices are [`crate::Topology::index_of`]'s business.
    NodeId, u16, "node"
);
id_type!(
    /// A logical CPU as the kernel numbers it (`/sys/devices/system/cpu/cpuN`).
    CpuId, u32, "cpu"
);
id_type!(
    /// A process id (thread-group id).
    Pid, i32, "pid "
);
id_type!(
    /// A thread id (the kernel's task id; equals the [`Pid`] for the main thread).
    Tid, i32, "tid "
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_serialise_as_plain_numbers() {
        assert_eq!(serde_json::to_string(&NodeId(3)).unwrap(), "3");
        assert_eq!(serde_json::from_str::<CpuId>("17").unwrap(), CpuId(17));
        assert_eq!(NodeId(2).to_string(), "node2");
        assert_eq!(Pid(42).to_string(), "pid 42");
    }
}
