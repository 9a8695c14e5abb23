//! One module per subcommand.

pub mod record;
pub mod run;
pub mod sim;
pub mod topo;
