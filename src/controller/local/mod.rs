//! What the controller keeps on this host's disk: the state file (the snapshot of the setup
//! tables, written atomically) and the config file it reads. `model/` holds the data and does
//! no I/O; these files add the reading and writing.
//!
//! Must not: talk to a server or decide when anything is saved or restored.

pub(crate) mod config_file;
pub(crate) mod state_file;
