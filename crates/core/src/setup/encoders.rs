//! Where the session's sentence encoders are: the English one (the one `antler models
//! fetch` installs by default, or the one the variable or config names) and, when it is
//! installed beside it, the multilingual one, which ranks together with it and alone ranks
//! queries written in CJK characters; and the dictionary that glosses Chinese queries into
//! English, when it is installed in the models folder too.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use antler_search::gloss::{DICTIONARY_NAME, Glossary};
use antler_search::semantic::cache::EmbeddingCache;
use antler_search::semantic::{self, ModelLocation, ModelSource, SemanticModel};

use crate::config::{AppConfig, EnvLookup, Loaded};

/// The session's encoders (not loaded), and where tool vectors are cached (the data folder).
pub(crate) struct Encoders {
    pub(crate) english: Arc<SemanticModel>,
    pub(crate) multilingual: Option<Arc<SemanticModel>>,
    /// Not read until a Chinese query is searched.
    pub(crate) dictionary: Option<Arc<Glossary>>,
}

impl Encoders {
    /// `None` when turned off or there is no home folder to find them in.
    pub(crate) fn find(app: &Loaded<AppConfig>, cwd: &Path, env: EnvLookup<'_>) -> Option<Self> {
        let config = &app.value.tool_search.semantic;
        if !config.enabled {
            return None;
        }
        let base = app
            .path
            .as_deref()
            .and_then(Path::parent)
            .map_or_else(|| cwd.to_path_buf(), |dir| cwd.join(dir));
        let english = semantic_location(config.model.as_deref(), &base, env)?;
        let multilingual = multilingual_location(env).filter(|m| !same_folder(&english, m));
        let cache = crate::config::dirs::data_dir(env)
            .map(|dir| EmbeddingCache::at(dir.join(semantic::cache::FILE)));
        let dictionary = in_models_dir(DICTIONARY_NAME, env)
            .map(|location| Arc::new(Glossary::new(location.dir)));
        Some(Self {
            dictionary,
            multilingual: multilingual
                .map(|location| Arc::new(SemanticModel::new(location, cache.clone()))),
            english: Arc::new(SemanticModel::new(english, cache)),
        })
    }
}

/// The model directory: `$ANTLER_SEMANTIC_MODEL`, else `configured` (relative to `base`),
/// else its folder in the models folder (`$ANTLER_MODELS_DIR`, else the cache folder's
/// `models`, where `antler models fetch` installs); `None` when there is no home folder to
/// find the default in.
fn semantic_location(
    configured: Option<&Path>,
    base: &Path,
    env: EnvLookup<'_>,
) -> Option<ModelLocation> {
    if let Some(dir) = env(semantic::MODEL_ENV).filter(|v| !v.is_empty()) {
        return Some(ModelLocation {
            dir: PathBuf::from(dir),
            source: ModelSource::Environment,
        });
    }
    if let Some(dir) = configured {
        return Some(ModelLocation {
            dir: base.join(dir),
            source: ModelSource::Config,
        });
    }
    in_models_dir(semantic::MODEL_NAME, env)
}

/// Whether the English model named by the variable or the config is the models folder's
/// multilingual one (however the path is spelt), which must not rank twice. Folders of the
/// models folder differ by name, so the default path reads nothing.
fn same_folder(english: &ModelLocation, multilingual: &ModelLocation) -> bool {
    match english.source {
        ModelSource::Environment | ModelSource::Config => {
            english.dir == multilingual.dir
                || matches!(
                    (english.dir.canonicalize(), multilingual.dir.canonicalize()),
                    (Ok(a), Ok(b)) if a == b
                )
        }
        ModelSource::ModelsDir | ModelSource::Default => false,
    }
}

/// The multilingual encoder's folder in the models folder.
fn multilingual_location(env: EnvLookup<'_>) -> Option<ModelLocation> {
    in_models_dir(semantic::MULTILINGUAL_MODEL_NAME, env)
}

/// The folder `name` in the models folder (see [`semantic_location`]).
fn in_models_dir(name: &str, env: EnvLookup<'_>) -> Option<ModelLocation> {
    let source = match env(crate::config::dirs::MODELS_DIR_ENV) {
        Some(dir) if Path::new(&dir).is_absolute() => ModelSource::ModelsDir,
        _ => ModelSource::Default,
    };
    crate::config::dirs::models_dir(env).map(|dir| ModelLocation {
        dir: dir.join(name),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::fixed_env;

    #[test]
    fn the_encoder_is_found_by_its_variable_then_config_then_the_models_folder() {
        let base = Path::new("/project");
        let at = |configured: Option<&str>, vars: &[(&str, &str)]| {
            let env = fixed_env(vars);
            semantic_location(configured.map(Path::new), base, &env)
                .map(|location| (location.dir, location.source))
        };
        let all = [
            ("HOME", "/h"),
            ("ANTLER_MODELS_DIR", "/m"),
            ("ANTLER_SEMANTIC_MODEL", "/e"),
        ];
        assert_eq!(
            at(Some("enc"), &all),
            Some((PathBuf::from("/e"), ModelSource::Environment))
        );
        assert_eq!(
            at(Some("enc"), &all[..2]),
            Some((PathBuf::from("/project/enc"), ModelSource::Config))
        );
        assert_eq!(
            at(None, &all[..2]),
            Some((PathBuf::from("/m/all-MiniLM-L6-v2"), ModelSource::ModelsDir))
        );
        assert_eq!(
            at(None, &all[..1]),
            Some((
                PathBuf::from("/h/.cache/antler/models/all-MiniLM-L6-v2"),
                ModelSource::Default
            ))
        );
        assert_eq!(at(None, &[]), None);
    }

    #[test]
    fn the_multilingual_encoder_is_in_the_models_folder_unless_it_is_the_english_one() {
        let env = fixed_env(&[("HOME", "/h"), ("ANTLER_MODELS_DIR", "/m")]);
        let found = multilingual_location(&env).unwrap();
        assert_eq!(found.dir, PathBuf::from("/m/multilingual-e5-small"));
        assert_eq!(found.source, ModelSource::ModelsDir);
        let app = Loaded::<AppConfig>::default();
        let both = Encoders::find(&app, Path::new("/p"), &env).unwrap();
        assert!(both.multilingual.is_some());
        let env = fixed_env(&[
            ("HOME", "/h"),
            ("ANTLER_MODELS_DIR", "/m"),
            ("ANTLER_SEMANTIC_MODEL", "/m/multilingual-e5-small"),
        ]);
        let one = Encoders::find(&app, Path::new("/p"), &env).unwrap();
        assert!(one.multilingual.is_none(), "the same model twice");
        assert_eq!(
            one.english.location().dir,
            PathBuf::from("/m/multilingual-e5-small")
        );
    }

    #[test]
    fn a_link_to_the_multilingual_model_is_the_same_model() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("multilingual-e5-small");
        std::fs::create_dir(&real).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let at = |dir: &Path, source| ModelLocation {
            dir: dir.to_path_buf(),
            source,
        };
        let multilingual = at(&real, ModelSource::ModelsDir);
        assert!(same_folder(
            &at(&link, ModelSource::Environment),
            &multilingual
        ));
        assert!(same_folder(&at(&real, ModelSource::Config), &multilingual));
        let other = dir.path().join("other");
        assert!(!same_folder(
            &at(&other, ModelSource::Environment),
            &multilingual
        ));
    }
}
