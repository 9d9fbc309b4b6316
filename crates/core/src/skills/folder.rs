//! A skill's folder: what is in it (for the model, after a load), that nothing in it leads
//! out of it (a link to `~/.ssh` would hand the file tools that folder), and for project
//! skills the hash of all of it, which is what trust is given to (a script changed behind
//! the user's back is a change).

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::SkillProblem;

/// The most entries a skill's folder may hold.
pub(crate) const MAX_ENTRIES: usize = 1000;
/// How deep a skill's folder may nest.
const MAX_DEPTH: usize = 8;
/// The most a project skill's files may hold in all (each is read to be hashed).
pub(crate) const MAX_HASHED_BYTES: u64 = 16 << 20;

/// One file of a skill's folder, relative to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The path inside the folder.
    pub path: PathBuf,
    /// Its size in bytes.
    pub size: u64,
    /// Whether it may be run (an executable bit is set).
    pub executable: bool,
}

/// The files of the folder `dir` (canonical), sorted, with every link checked to stay in
/// it. Nothing is read.
pub(crate) fn entries(dir: &Path) -> Result<Vec<Entry>, SkillProblem> {
    let mut found = Vec::new();
    walk(dir, dir, 0, &mut found)?;
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}

fn walk(root: &Path, dir: &Path, depth: usize, found: &mut Vec<Entry>) -> Result<(), SkillProblem> {
    use std::os::unix::fs::PermissionsExt;
    let problem = |path: &Path, why: String| SkillProblem::in_file(path.to_path_buf(), why);
    if depth > MAX_DEPTH {
        return Err(problem(
            dir,
            format!("nests deeper than {MAX_DEPTH} folders"),
        ));
    }
    let read =
        std::fs::read_dir(dir).map_err(|e| problem(dir, format!("cannot be listed: {e}")))?;
    for item in read {
        let item = item.map_err(|e| problem(dir, format!("cannot be listed: {e}")))?;
        let path = item.path();
        let meta = std::fs::symlink_metadata(&path)
            .map_err(|e| problem(&path, format!("cannot be read: {e}")))?;
        let is_link = meta.file_type().is_symlink();
        let meta = if is_link {
            let target = std::fs::canonicalize(&path)
                .map_err(|_| problem(&path, String::from("is a link that leads nowhere")))?;
            if !target.starts_with(root) {
                return Err(problem(
                    &path,
                    String::from("is a link that leads out of the skill's folder"),
                ));
            }
            std::fs::metadata(&target)
                .map_err(|e| problem(&path, format!("cannot be read: {e}")))?
        } else {
            meta
        };
        if meta.is_dir() {
            if found.len() >= MAX_ENTRIES {
                return Err(problem(
                    root,
                    format!("holds more than {MAX_ENTRIES} files"),
                ));
            }
            // A link to a folder inside is not followed: it is there already, and a
            // link loop would never end.
            if !is_link {
                walk(root, &path, depth + 1, found)?;
            }
            continue;
        }
        if !meta.is_file() {
            return Err(problem(&path, String::from("is not a regular file")));
        }
        if found.len() >= MAX_ENTRIES {
            return Err(problem(
                root,
                format!("holds more than {MAX_ENTRIES} files"),
            ));
        }
        let relative = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
        found.push(Entry {
            path: relative,
            size: meta.len(),
            executable: meta.permissions().mode() & 0o111 != 0,
        });
    }
    Ok(())
}

/// Checks that no link in the folder `root` (canonical) leads out of it, from the
/// directory entries' types alone: nothing but links is looked at, nothing is read. What
/// discovery checks of a skill it does not hash.
pub(crate) fn check_links(root: &Path) -> Result<(), SkillProblem> {
    let mut pending = vec![(root.to_path_buf(), 0usize)];
    let mut seen = 0usize;
    while let Some((dir, depth)) = pending.pop() {
        if depth > MAX_DEPTH {
            return Err(SkillProblem::in_file(
                dir,
                format!("nests deeper than {MAX_DEPTH} folders"),
            ));
        }
        let read = std::fs::read_dir(&dir)
            .map_err(|e| SkillProblem::in_file(dir.clone(), format!("cannot be listed: {e}")))?;
        for item in read {
            let item = item.map_err(|e| {
                SkillProblem::in_file(dir.clone(), format!("cannot be listed: {e}"))
            })?;
            seen += 1;
            if seen > MAX_ENTRIES {
                return Err(SkillProblem::in_file(
                    root.to_path_buf(),
                    format!("holds more than {MAX_ENTRIES} files"),
                ));
            }
            let kind = item
                .file_type()
                .map_err(|e| SkillProblem::in_file(item.path(), format!("cannot be read: {e}")))?;
            if kind.is_symlink() {
                let path = item.path();
                let inside = std::fs::canonicalize(&path).is_ok_and(|t| t.starts_with(root));
                if !inside {
                    return Err(SkillProblem::in_file(
                        path,
                        String::from("is a link that leads out of the skill's folder (or nowhere)"),
                    ));
                }
            } else if kind.is_dir() {
                pending.push((item.path(), depth + 1));
            }
        }
    }
    Ok(())
}

/// The SHA-256 (hex) of the folder: every file's path, mode and content, in order; and the
/// SKILL.md as hashed, so that what is parsed is what was trusted.
pub(crate) fn hash(dir: &Path, entries: &[Entry]) -> Result<(String, Vec<u8>), SkillProblem> {
    use std::os::unix::ffi::OsStrExt;
    let total = entries
        .iter()
        .fold(0u64, |sum, e| sum.saturating_add(e.size));
    if total > MAX_HASHED_BYTES {
        return Err(SkillProblem::in_file(
            dir.to_path_buf(),
            format!(
                "holds {total} bytes of files; a project skill may hold at most {} MiB",
                MAX_HASHED_BYTES >> 20
            ),
        ));
    }
    let mut digest = Sha256::new();
    let mut buffer = Vec::new();
    let mut skill_md = Vec::new();
    let mut left = MAX_HASHED_BYTES;
    for entry in entries {
        let path = dir.join(&entry.path);
        let file = crate::base::bounded_read::open_regular(&path).map_err(|e| {
            let e = std::io::Error::from(e);
            SkillProblem::in_file(path.clone(), format!("cannot be read: {e}"))
        })?;
        buffer.clear();
        // Never more than the budget left, whatever the file claims to hold.
        file.take(entry.size.min(left) + 1)
            .read_to_end(&mut buffer)
            .map_err(|e| SkillProblem::in_file(path.clone(), format!("cannot be read: {e}")))?;
        left = left.saturating_sub(buffer.len() as u64);
        let name = entry.path.as_os_str().as_bytes();
        digest.update((name.len() as u64).to_le_bytes());
        digest.update(name);
        digest.update([u8::from(entry.executable)]);
        digest.update((buffer.len() as u64).to_le_bytes());
        digest.update(&buffer);
        if entry.path.as_os_str() == "SKILL.md" {
            skill_md = std::mem::take(&mut buffer);
        }
    }
    Ok((crate::base::describe::hex(&digest.finalize()), skill_md))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_listed_and_hashed_with_their_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("scripts")).unwrap();
        std::fs::write(root.join("SKILL.md"), "x").unwrap();
        std::fs::write(root.join("scripts/run.sh"), "echo hi").unwrap();
        std::os::unix::fs::symlink("SKILL.md", root.join("README.md")).unwrap();
        let list = entries(&root).unwrap();
        let names: Vec<_> = list.iter().map(|e| e.path.display().to_string()).collect();
        assert_eq!(names, ["README.md", "SKILL.md", "scripts/run.sh"]);
        let before = hash(&root, &list).unwrap().0;
        std::fs::set_permissions(
            root.join("scripts/run.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let list = entries(&root).unwrap();
        assert!(list[2].executable);
        let after = hash(&root, &list).unwrap().0;
        assert_ne!(before, after, "a script made executable is a change");
        std::fs::write(root.join("scripts/run.sh"), "rm -rf ~").unwrap();
        assert_ne!(after, hash(&root, &entries(&root).unwrap()).unwrap().0);
    }

    #[test]
    fn a_link_out_of_the_folder_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let skill = root.join("s");
        std::fs::create_dir_all(skill.join("refs")).unwrap();
        std::fs::create_dir_all(root.join("ssh")).unwrap();
        std::os::unix::fs::symlink(root.join("ssh"), skill.join("refs/keys")).unwrap();
        let err = entries(&skill).unwrap_err();
        assert!(
            err.message.contains("leads out of the skill's folder"),
            "{err:?}"
        );
        assert_eq!(err.file.as_deref(), Some(skill.join("refs/keys").as_path()));
    }
}
