//! One module per subcommand.

pub mod daemon;
pub mod migrate;
pub mod options;
pub mod record;
pub mod run;
pub mod sim;
pub mod topo;
