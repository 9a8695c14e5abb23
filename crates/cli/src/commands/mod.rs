//! One module per subcommand.

pub mod topo;
