//! The real model for tests, as `.ci/interop-deps` installs it.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use super::Encoder;

/// The all-MiniLM-L6-v2 directory `.ci/interop-deps` links (under `ANTLER_INTEROP_DIR`,
/// default `target/interop`).
pub(crate) fn model_dir() -> PathBuf {
    let dir = std::env::var_os("ANTLER_INTEROP_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/interop"))
        .join("minilm");
    assert!(
        dir.join("model.safetensors").exists(),
        "the sentence encoder's model is not installed in {}: run `bash .ci/interop-deps` first",
        dir.display()
    );
    dir
}

/// The model, loaded once for all tests of the process.
pub(crate) fn encoder() -> Arc<Encoder> {
    static ENCODER: OnceLock<Arc<Encoder>> = OnceLock::new();
    Arc::clone(ENCODER.get_or_init(|| {
        Arc::new(Encoder::load(&model_dir()).unwrap_or_else(|e| panic!("model loads: {e}")))
    }))
}
