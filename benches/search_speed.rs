//! Placeholder: filled in by the tool-search work.

fn main() {}
