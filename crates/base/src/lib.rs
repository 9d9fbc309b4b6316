//! antler's bottom floor, the part every other crate may use: character classes and short
//! forms of untrusted text (`text`), plain-text tables (`table`), time without a date
//! crate (`clock`), and values as messages name them (`describe`). Only std and
//! serde_json: the chat's screen and the protocol use it without the core.

pub mod clock;
pub mod describe;
pub mod table;
pub mod text;
