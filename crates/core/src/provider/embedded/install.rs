//! Installing a chat model: downloaded from its pinned upstream revision (resumable: an
//! interrupted download continues where it stopped) or copied from a local file, hashed as
//! it is written, and renamed into place only when size and SHA-256 are the pinned ones.
//! A stamp beside the file records what was checked, so loading it need not hash it again.

use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::StreamExt;
use sha2::{Digest, Sha256};

use super::catalog::ChatModel;

/// Why a model could not be installed or verified.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// The download failed.
    #[error("downloading {url}: {message}")]
    Download {
        /// What was asked for: [`ChatModel::url`] when `antler models fetch` runs.
        url: String,
        /// What went wrong.
        message: String,
    },
    /// The file is not the pinned one.
    #[error(
        "{} is not the pinned {title} file ({got}; expected {size} bytes with SHA-256 {sha256})",
        path.display()
    )]
    Mismatch {
        /// The file checked.
        path: PathBuf,
        /// The model it should be.
        title: &'static str,
        /// Its pinned size.
        size: u64,
        /// Its pinned hash.
        sha256: &'static str,
        /// Its size, and its SHA-256 when it was hashed (a wrong size is found first).
        got: String,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> InstallError + '_ {
    move |source| InstallError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// How far a copy or download has come: bytes done, bytes in all.
pub(crate) type DownloadProgress<'a> = &'a (dyn Fn(u64, u64) + Sync);

/// A hidden file beside `target`: `.NAME.suffix`.
fn beside(target: &Path, suffix: &str) -> PathBuf {
    let name = target
        .file_name()
        .map_or_else(|| "model".into(), |n| n.to_string_lossy().into_owned());
    target.with_file_name(format!(".{name}.{suffix}"))
}

/// The staging file beside `target`.
fn partial_path(target: &Path) -> PathBuf {
    beside(target, "partial")
}

/// The stamp beside `target`: size, modification time and hash as checked.
fn stamp_path(target: &Path) -> PathBuf {
    beside(target, "verified")
}

/// What identifies the file as checked: its device, inode, size and change time (which,
/// unlike the modification time, no one can set back), and the hash it had.
fn stamp_text(path: &Path, model: &ChatModel) -> Result<String, InstallError> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).map_err(io(path))?;
    Ok(format!(
        "{} {} {} {}.{} {}\n",
        meta.dev(),
        meta.ino(),
        meta.len(),
        meta.ctime(),
        meta.ctime_nsec(),
        model.sha256
    ))
}

/// Checks that `path` is `model`'s file: by the stamp when it still describes the file, else
/// by hashing it (and then stamping it). Runs before the file is parsed.
pub(crate) fn verify(path: &Path, model: &ChatModel) -> Result<(), InstallError> {
    let size = std::fs::metadata(path).map_err(io(path))?.len();
    if size != model.size {
        return Err(mismatch(path, model, format!("{size} bytes")));
    }
    let stamp = stamp_path(path);
    if std::fs::read_to_string(&stamp).ok() == Some(stamp_text(path, model)?) {
        return Ok(());
    }
    let mut file = std::fs::File::open(path).map_err(io(path))?;
    let mut hasher = Sha256::new();
    hash_into(&mut hasher, &mut file, &mut |_| Ok(())).map_err(io(path))?;
    check(path, model, size, &hasher.finalize())?;
    // A stamp that cannot be written only costs the next load a hash.
    let _ = std::fs::write(&stamp, stamp_text(path, model)?);
    Ok(())
}

/// Feeds all of `source` to `hasher`, and each piece to `sink`; returns the bytes read.
fn hash_into(
    hasher: &mut Sha256,
    source: &mut dyn Read,
    sink: &mut dyn FnMut(&[u8]) -> std::io::Result<()>,
) -> std::io::Result<u64> {
    let mut buffer = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = match source.read(&mut buffer) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buffer[..n]);
        sink(&buffer[..n])?;
        total += n as u64;
    }
}

fn check(path: &Path, model: &ChatModel, size: u64, digest: &[u8]) -> Result<(), InstallError> {
    let got = crate::base::describe::hex(digest);
    if size == model.size && got == model.sha256 {
        return Ok(());
    }
    Err(mismatch(
        path,
        model,
        format!("{size} bytes with SHA-256 {got}"),
    ))
}

fn mismatch(path: &Path, model: &ChatModel, got: String) -> InstallError {
    InstallError::Mismatch {
        path: path.to_path_buf(),
        title: model.title,
        size: model.size,
        sha256: model.sha256,
        got,
    }
}

/// Moves the checked staging file into place and stamps it.
fn commit(partial: &Path, target: &Path, model: &ChatModel) -> Result<PathBuf, InstallError> {
    std::fs::rename(partial, target).map_err(io(target))?;
    let _ = std::fs::write(stamp_path(target), stamp_text(target, model)?);
    Ok(target.to_path_buf())
}

/// Whether two paths name one file (the same device and inode).
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Creates the folder `target` goes in.
fn make_parent(target: &Path) -> Result<(), InstallError> {
    let parent = target.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(io(parent))
}

/// Copies `model`'s file from `from` to `target`, checking it on the way.
pub(crate) fn install_from(
    from: &Path,
    target: &Path,
    model: &ChatModel,
    progress: DownloadProgress<'_>,
) -> Result<PathBuf, InstallError> {
    make_parent(target)?;
    let partial = partial_path(target);
    if same_file(from, &partial) {
        // A complete download that was not renamed yet: check it where it is.
        let mut hasher = Sha256::new();
        let mut source = std::fs::File::open(from).map_err(io(from))?;
        let size = hash_into(&mut hasher, &mut source, &mut |_| Ok(())).map_err(io(from))?;
        return finish(&partial, target, model, size, hasher);
    }
    let mut source = std::fs::File::open(from).map_err(io(from))?;
    let size = source.metadata().map_err(io(from))?.len();
    if size != model.size {
        return Err(mismatch(from, model, format!("{size} bytes")));
    }
    let mut out = std::fs::File::create(&partial).map_err(io(&partial))?;
    let mut hasher = Sha256::new();
    let mut written = 0u64;
    let done = hash_into(&mut hasher, &mut source, &mut |piece| {
        out.write_all(piece)?;
        written += piece.len() as u64;
        progress(written, size);
        Ok(())
    })
    .map_err(io(&partial))?;
    out.sync_all().map_err(io(&partial))?;
    if let Err(err) = check(from, model, done, &hasher.finalize()) {
        let _ = std::fs::remove_file(&partial);
        return Err(err);
    }
    commit(&partial, target, model)
}

/// Downloads `model` from `url` (its [`ChatModel::url`]) to `target`, continuing an earlier
/// partial download.
pub(crate) async fn download(
    client: &reqwest::Client,
    url: &str,
    target: &Path,
    model: &ChatModel,
    progress: DownloadProgress<'_>,
) -> Result<PathBuf, InstallError> {
    make_parent(target)?;
    let partial = partial_path(target);
    let failed = |message: String| InstallError::Download {
        url: url.to_string(),
        message,
    };
    let (mut file, mut have, mut hasher) = open_partial(&partial, model.size)?;
    if have == model.size {
        // Complete already (stopped before its rename): nothing to ask for.
        return finish(&partial, target, model, have, hasher);
    }
    let mut request = client.get(url);
    if have > 0 {
        request = request.header(reqwest::header::RANGE, format!("bytes={have}-"));
    }
    let response = request.send().await.map_err(|e| failed(e.to_string()))?;
    let resumed = response
        .headers()
        .get(reqwest::header::CONTENT_RANGE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|range| range.starts_with(&format!("bytes {have}-")));
    match response.status().as_u16() {
        206 if have == 0 || resumed => {}
        // The server ignored the range, or sent another one: start over.
        200 | 206 if have > 0 => {
            if response.status().as_u16() == 206 {
                let _ = std::fs::remove_file(&partial);
                return Err(failed(format!(
                    "the server sent another range than bytes {have}-; the partial download \
                     is removed, run the command again"
                )));
            }
            file.set_len(0).map_err(io(&partial))?;
            have = 0;
            hasher = Sha256::new();
        }
        200 => {}
        status => return Err(failed(format!("HTTP {status}"))),
    }
    file.seek(std::io::SeekFrom::Start(have))
        .map_err(io(&partial))?;
    let sink = Sink {
        file,
        partial: &partial,
        hasher,
        done: have,
        size: model.size,
    };
    let (done, hasher) = sink
        .write_body(response, progress)
        .await
        .map_err(|err| match err {
            BodyError::Install(err) => err,
            BodyError::Download(message) => failed(message),
        })?;
    finish(&partial, target, model, done, hasher)
}

/// The staging file, opened to go on where an earlier download stopped: how much it
/// holds (none if more than `size`) and the hash of that much.
fn open_partial(partial: &Path, size: u64) -> Result<(std::fs::File, u64, Sha256), InstallError> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(partial)
        .map_err(io(partial))?;
    let mut have = file.metadata().map_err(io(partial))?.len();
    if have > size {
        file.set_len(0).map_err(io(partial))?;
        have = 0;
    }
    let mut hasher = Sha256::new();
    if have > 0 {
        // What is already there is hashed first; the rest is hashed as it arrives.
        let mut taken = (&mut file).take(have);
        hash_into(&mut hasher, &mut taken, &mut |_| Ok(())).map_err(io(partial))?;
    }
    Ok((file, have, hasher))
}

/// Why a body was not written whole.
enum BodyError {
    Install(InstallError),
    /// What went wrong with the download, for [`InstallError::Download`].
    Download(String),
}

/// Where a download's body goes: the staging file at `done` bytes, hashed as written.
struct Sink<'a> {
    file: std::fs::File,
    partial: &'a Path,
    hasher: Sha256,
    done: u64,
    size: u64,
}

impl Sink<'_> {
    /// Writes the body to the end, never past `size` and never waiting more than 60 s for
    /// data; the bytes written in all and their hash.
    async fn write_body(
        mut self,
        response: reqwest::Response,
        progress: DownloadProgress<'_>,
    ) -> Result<(u64, Sha256), BodyError> {
        let io = |err| BodyError::Install(io(self.partial)(err));
        let mut body = response.bytes_stream();
        progress(self.done, self.size);
        loop {
            let next = tokio::time::timeout(Duration::from_secs(60), body.next()).await;
            let chunk = match next {
                Err(_) => {
                    return Err(BodyError::Download(
                        "no data for 60 s; run the command again to resume".into(),
                    ));
                }
                Ok(None) => break,
                Ok(Some(Err(e))) => {
                    return Err(BodyError::Download(format!(
                        "{e}; run the command again to resume"
                    )));
                }
                Ok(Some(Ok(chunk))) => chunk,
            };
            self.done += chunk.len() as u64;
            if self.done > self.size {
                let _ = std::fs::remove_file(self.partial);
                return Err(BodyError::Download(format!(
                    "more than the pinned {} bytes",
                    self.size
                )));
            }
            self.hasher.update(&chunk);
            self.file.write_all(&chunk).map_err(io)?;
            progress(self.done, self.size);
        }
        self.file.sync_all().map_err(io)?;
        if self.done < self.size {
            return Err(BodyError::Download(format!(
                "the download stopped at {} of {} bytes; run the command again to resume",
                self.done, self.size
            )));
        }
        Ok((self.done, self.hasher))
    }
}

/// Checks the complete staging file and puts it in place, or removes it.
fn finish(
    partial: &Path,
    target: &Path,
    model: &ChatModel,
    size: u64,
    hasher: Sha256,
) -> Result<PathBuf, InstallError> {
    if let Err(err) = check(partial, model, size, &hasher.finalize()) {
        let _ = std::fs::remove_file(partial);
        return Err(err);
    }
    commit(partial, target, model)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::embedded::catalog::CHAT_SMALL;

    fn tiny(content: &[u8]) -> ChatModel {
        let sha = crate::base::describe::hex(&Sha256::digest(content));
        ChatModel {
            size: content.len() as u64,
            sha256: Box::leak(sha.into_boxed_str()),
            ..CHAT_SMALL
        }
    }

    #[test]
    fn a_local_copy_installs_only_when_it_is_the_pinned_file() {
        let dir = tempfile::tempdir().unwrap();
        let model = tiny(b"GGUF pinned bytes");
        let from = dir.path().join("copy.gguf");
        std::fs::write(&from, b"GGUF pinned bytes").unwrap();
        let target = model.path(&dir.path().join("models"));
        let installed = install_from(&from, &target, &model, &|_, _| {}).unwrap();
        assert_eq!(std::fs::read(&installed).unwrap(), b"GGUF pinned bytes");
        verify(&installed, &model).unwrap();

        // Same size, other bytes: refused, and nothing is left behind.
        std::fs::write(&from, b"GGUF tampered!!!!").unwrap();
        let other = dir.path().join("other").join("m.gguf");
        let err = install_from(&from, &other, &model, &|_, _| {}).unwrap_err();
        assert!(err.to_string().contains("is not the pinned"), "{err}");
        assert!(!other.exists() && !partial_path(&other).exists());
    }

    /// Serves `bytes` at `/m`: the first answer ends after `cut` bytes, later ones honour
    /// `Range` unless `ignore_range`. Returns the address and the `Range` headers seen.
    async fn serve(
        bytes: &'static [u8],
        cut: usize,
        ignore_range: bool,
    ) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
        use axum::body::Body;
        use axum::http::{HeaderMap, Response};
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = seen.clone();
        let app = axum::Router::new().route(
            "/m",
            axum::routing::get(move |headers: HeaderMap| {
                let log = log.clone();
                async move {
                    let range = headers
                        .get("range")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_string);
                    let first = {
                        let mut log = log.lock().unwrap();
                        log.push(range.clone().unwrap_or_default());
                        log.len() == 1
                    };
                    let start = range
                        .filter(|_| !ignore_range)
                        .and_then(|r| r.strip_prefix("bytes=")?.strip_suffix('-')?.parse().ok())
                        .unwrap_or(0usize);
                    if first {
                        // The connection ends early: the first `cut` bytes only.
                        let body = Body::from(bytes[..cut].to_vec());
                        return Response::builder().status(200).body(body).unwrap();
                    }
                    let builder = if start > 0 {
                        let range = format!("bytes {start}-{}/{}", bytes.len() - 1, bytes.len());
                        Response::builder()
                            .status(206)
                            .header("content-range", range)
                    } else {
                        Response::builder().status(200)
                    };
                    builder.body(Body::from(bytes[start..].to_vec())).unwrap()
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = format!("http://{}/m", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        (address, seen)
    }

    #[tokio::test]
    async fn an_interrupted_download_resumes_where_it_stopped() {
        const BYTES: &[u8] = b"GGUF a model file of some length, sent in two parts";
        for ignore_range in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let model = tiny(BYTES);
            let target = model.path(dir.path());
            let (url, seen) = serve(BYTES, 20, ignore_range).await;
            let client = crate::base::http::http_client_builder().build().unwrap();
            let err = download(&client, &url, &target, &model, &|_, _| {})
                .await
                .unwrap_err();
            assert!(
                err.to_string().contains("run the command again to resume"),
                "{err}"
            );
            assert_eq!(std::fs::metadata(partial_path(&target)).unwrap().len(), 20);
            let installed = download(&client, &url, &target, &model, &|_, _| {})
                .await
                .unwrap();
            assert_eq!(std::fs::read(&installed).unwrap(), BYTES);
            assert!(!partial_path(&target).exists());
            assert_eq!(
                seen.lock().unwrap()[1],
                "bytes=20-",
                "the second asks for the rest"
            );
            verify(&installed, &model).unwrap();
        }
    }

    #[tokio::test]
    async fn a_complete_download_left_before_its_rename_is_installed_without_asking_again() {
        const BYTES: &[u8] = b"GGUF complete but not renamed";
        let dir = tempfile::tempdir().unwrap();
        let model = tiny(BYTES);
        let target = model.path(dir.path());
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(partial_path(&target), BYTES).unwrap();
        let client = crate::base::http::http_client_builder().build().unwrap();
        // Port 1: nothing listens there, and nothing needs to.
        let installed = download(&client, "http://127.0.0.1:1/m", &target, &model, &|_, _| {})
            .await
            .unwrap();
        assert_eq!(std::fs::read(installed).unwrap(), BYTES);

        // `--from` the staging file itself checks it in place instead of truncating it.
        let target = model.path(&dir.path().join("again"));
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(partial_path(&target), BYTES).unwrap();
        let installed = install_from(&partial_path(&target), &target, &model, &|_, _| {}).unwrap();
        assert_eq!(std::fs::read(installed).unwrap(), BYTES);
    }

    #[tokio::test]
    async fn a_download_that_is_not_the_pinned_file_installs_nothing() {
        const BYTES: &[u8] = b"GGUF the pinned bytes";
        const OTHER: &[u8] = b"GGUF other bytes!!!!!";
        let dir = tempfile::tempdir().unwrap();
        let model = tiny(BYTES);
        let target = model.path(dir.path());
        let (url, _) = serve(OTHER, 5, false).await;
        let client = crate::base::http::http_client_builder().build().unwrap();
        let _ = download(&client, &url, &target, &model, &|_, _| {}).await;
        let err = download(&client, &url, &target, &model, &|_, _| {})
            .await
            .unwrap_err();
        assert!(err.to_string().contains("is not the pinned"), "{err}");
        assert!(!target.exists() && !partial_path(&target).exists());
    }

    #[test]
    fn a_file_changed_after_install_is_refused_before_it_is_parsed() {
        let dir = tempfile::tempdir().unwrap();
        let model = tiny(b"GGUF pinned bytes");
        let from = dir.path().join("copy.gguf");
        std::fs::write(&from, b"GGUF pinned bytes").unwrap();
        let target = install_from(&from, &model.path(dir.path()), &model, &|_, _| {}).unwrap();
        // Replaced by another file of the same size: another inode, so the stamp no longer
        // describes it and it is hashed again.
        let other = dir.path().join("other.gguf");
        std::fs::write(&other, b"GGUF tampered!!!!").unwrap();
        std::fs::rename(&other, &target).unwrap();
        let err = verify(&target, &model).unwrap_err();
        assert!(err.to_string().contains("SHA-256"), "{err}");
        std::fs::write(&target, b"GGUF").unwrap();
        let err = verify(&target, &model).unwrap_err();
        assert!(err.to_string().contains("4 bytes"), "truncated: {err}");
    }
}
