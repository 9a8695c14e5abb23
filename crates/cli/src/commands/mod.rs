//! One module per subcommand.

pub mod calibrate;
pub mod daemon;
pub mod doctor;
pub mod explain;
pub mod list;
pub mod matrix;
pub mod migrate;
pub mod record;
pub mod report;
pub mod run;
pub mod selfcheck;
pub mod shell;
pub mod sim;
pub mod topo;
