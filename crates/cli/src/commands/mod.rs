//! One module per subcommand.

pub mod record;
pub mod sim;
pub mod topo;
