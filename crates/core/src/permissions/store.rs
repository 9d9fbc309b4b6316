//! "Allow always" answers, per project, in `approvals.json` in antler's data folder (which
//! no tool may write). Each is pinned to the SHA-256 of the tool's schema: when a server
//! changes what a tool takes or says it does, the approval lapses and the user is asked
//! again, so an approved tool cannot be swapped for another behind the user's back.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::tools::ToolInfo;

/// The store's file name inside the data folder.
const FILE: &str = "approvals.json";
/// The format version written.
const VERSION: u32 = 1;
/// The most approvals kept per project (the oldest go first).
const MAX_PER_PROJECT: usize = 500;

/// Why the store could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}", path = path.display())]
pub struct ApprovalStoreError {
    path: PathBuf,
    message: String,
}

/// One "always" answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    /// The name the model calls it by.
    pub tool: String,
    /// The SHA-256 of its schema when approved ([`schema_hash`]).
    pub schema: String,
    /// For a command tool: the words the command starts with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<Vec<String>>,
    /// When, in seconds since the Unix epoch.
    pub approved_at: i64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Contents {
    version: u32,
    #[serde(default)]
    projects: BTreeMap<PathBuf, Vec<Approval>>,
}

/// The store at a fixed path, read again for every question (another terminal may have
/// added an approval).
#[derive(Debug, Clone)]
pub struct ApprovalStore {
    path: PathBuf,
}

/// The SHA-256 of what a tool is: its name, description, schema and where it comes from.
pub fn schema_hash(info: &ToolInfo) -> String {
    let identity = serde_json::json!([info.name, info.description, info.parameters, info.source]);
    crate::base::describe::hex(&Sha256::digest(identity.to_string().as_bytes()))
}

impl ApprovalStore {
    /// The store in `data_dir`.
    pub fn in_dir(data_dir: &Path) -> Self {
        Self {
            path: data_dir.join(FILE),
        }
    }

    /// The store file.
    #[cfg(test)]
    fn path(&self) -> &Path {
        &self.path
    }

    fn error(&self, message: impl std::fmt::Display) -> ApprovalStoreError {
        ApprovalStoreError {
            path: self.path.clone(),
            message: message.to_string(),
        }
    }

    fn read(&self) -> Result<Contents, ApprovalStoreError> {
        // Approvals someone else could have written are not used.
        let bytes = match crate::base::private_file::read_state(&self.path) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Ok(Contents::default()),
            Err(e) => return Err(self.error(e)),
        };
        let contents: Contents = serde_json::from_slice(&bytes).map_err(|e| {
            self.error(format!(
                "not an approvals file antler can read ({e}); nothing in it is approved"
            ))
        })?;
        if contents.version != VERSION {
            return Err(self.error(format!(
                "version {} (expected {VERSION}); nothing in it is approved",
                contents.version
            )));
        }
        Ok(contents)
    }

    /// The approvals of `project`.
    pub fn approvals(&self, project: &Path) -> Result<Vec<Approval>, ApprovalStoreError> {
        Ok(self.read()?.projects.remove(project).unwrap_or_default())
    }

    /// Adds `approval` to `project` (replacing one for the same tool and prefix).
    pub fn add(&self, project: &Path, approval: Approval) -> Result<(), ApprovalStoreError> {
        // Another antler may be adding one too: one read-modify-write at a time.
        let _locked = crate::base::private_file::lock(&self.path).map_err(|e| self.error(e))?;
        // An unreadable store is reported, never overwritten.
        let mut contents = self.read()?;
        contents.version = VERSION;
        let list = contents.projects.entry(project.to_path_buf()).or_default();
        list.retain(|a| !(a.tool == approval.tool && a.prefix == approval.prefix));
        list.push(approval);
        if list.len() > MAX_PER_PROJECT {
            let excess = list.len() - MAX_PER_PROJECT;
            list.drain(..excess);
        }
        let text = serde_json::to_string_pretty(&contents).map_err(|e| self.error(e))?;
        crate::base::private_file::write_atomically(&self.path, text.as_bytes())
            .map_err(|e| self.error(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::ToolSource;

    fn info(parameters: serde_json::Value) -> ToolInfo {
        ToolInfo {
            name: "gh_create".into(),
            description: "creates".into(),
            parameters,
            source: ToolSource::Mcp {
                server: "gh".into(),
                original_name: "create".into(),
            },
            metadata: serde_json::Map::new(),
            parallel: false,
        }
    }

    #[test]
    fn approvals_are_per_project_and_replace_their_own() {
        let dir = tempfile::tempdir().unwrap();
        let store = ApprovalStore::in_dir(dir.path());
        let (a, b) = (Path::new("/p/a"), Path::new("/p/b"));
        assert!(store.approvals(a).unwrap().is_empty());
        let approval = |schema: &str, prefix: Option<&[&str]>| Approval {
            tool: "bash".into(),
            schema: schema.into(),
            prefix: prefix.map(|p| p.iter().map(|w| w.to_string()).collect()),
            approved_at: 1,
        };
        store
            .add(a, approval("s1", Some(&["git", "status"])))
            .unwrap();
        store
            .add(a, approval("s2", Some(&["git", "status"])))
            .unwrap();
        store.add(a, approval("s2", Some(&["ls"]))).unwrap();
        let kept = store.approvals(a).unwrap();
        assert_eq!(kept.len(), 2);
        assert_eq!(kept[0].schema, "s2");
        assert!(store.approvals(b).unwrap().is_empty());
    }

    #[test]
    fn approvals_added_at_once_are_all_kept() {
        let dir = tempfile::tempdir().unwrap();
        let store = ApprovalStore::in_dir(dir.path());
        let project = Path::new("/p");
        std::thread::scope(|scope| {
            for i in 0..8 {
                let store = store.clone();
                scope.spawn(move || {
                    let approval = Approval {
                        tool: format!("t{i}"),
                        schema: String::from("s"),
                        prefix: None,
                        approved_at: 1,
                    };
                    store.add(project, approval).unwrap();
                });
            }
        });
        assert_eq!(store.approvals(project).unwrap().len(), 8);
    }

    #[test]
    fn a_broken_store_approves_nothing_and_is_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let store = ApprovalStore::in_dir(dir.path());
        std::fs::write(store.path(), "{nope").unwrap();
        let err = store.approvals(Path::new("/p")).unwrap_err().to_string();
        assert!(err.contains("nothing in it is approved"), "{err}");
        let approval = Approval {
            tool: "t".into(),
            schema: "s".into(),
            prefix: None,
            approved_at: 1,
        };
        assert!(store.add(Path::new("/p"), approval).is_err());
        assert_eq!(std::fs::read_to_string(store.path()).unwrap(), "{nope");
    }

    #[test]
    fn the_schema_hash_changes_with_the_schema_and_description() {
        let one = info(serde_json::json!({"type": "object"}));
        let mut two = one.clone();
        two.parameters = serde_json::json!({"type": "object", "properties": {"x": {}}});
        let mut three = one.clone();
        three.description = "creates, and mails your keys away".into();
        let hashes = [schema_hash(&one), schema_hash(&two), schema_hash(&three)];
        assert_ne!(hashes[0], hashes[1]);
        assert_ne!(hashes[0], hashes[2]);
        assert_eq!(schema_hash(&one.clone()), hashes[0]);
    }
}
