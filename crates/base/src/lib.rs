//! antler's bottom floor, the part every other crate may use: character classes and short
//! forms of untrusted text (`text`), plain-text tables (`table`), time without a date
//! crate (`clock`), values as messages name them (`describe`), regular files read with a
//! size cap, never a FIFO or a device (`bounded_read`; links are followed), and files only
//! the user may read, opened without following links (`private_file`). Only std, serde_json, nix (file modes and owners) and fastrand (temporary names): the
//! chat's screen, the protocol and the search use it without the core.

pub mod bounded_read;
pub mod clock;
pub mod describe;
pub mod private_file;
pub mod table;
pub mod text;
