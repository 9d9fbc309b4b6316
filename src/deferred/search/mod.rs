//! Ranked tool search over names, descriptions and parameters.
