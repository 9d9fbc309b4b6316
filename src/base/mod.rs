//! The bottom floor: helpers that know nothing of tools, servers, threads or models, and
//! that every floor above may use. Nothing here imports another antler module.

pub mod bounded_read;
pub mod clock;
pub mod describe;
pub mod http;
pub mod output_file;
pub mod pending;
pub mod private_file;
pub mod process;
pub mod text;
