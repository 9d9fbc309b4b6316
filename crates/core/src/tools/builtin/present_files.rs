//! `present_files(filepaths)`: the model marks workspace files as the run's output, so
//! front-ends can show them (listed after a one-shot run, in the `json` result, in the TUI).

use serde::Deserialize;
use serde_json::{Map, json};

use crate::tools::Effect;
use crate::tools::sandbox::Workspace;
use crate::tools::{
    StateUpdate, ToolContext, ToolFuture, ToolInfo, ToolOutput, ToolSource, TypedTool,
};

pub(crate) const PRESENT_FILES: &str = "present_files";

/// Marks existing workspace files as output.
pub(crate) struct PresentFiles {
    info: ToolInfo,
    workspace: Workspace,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    filepaths: Vec<String>,
}

impl PresentFiles {
    /// The tool over `workspace`.
    pub(crate) fn new(workspace: Workspace) -> Self {
        Self {
            info: ToolInfo {
                name: PRESENT_FILES.to_string(),
                description: "Present files you created or changed in the workspace to the \
                              user as the result of the task. Call it once the files are \
                              final."
                    .to_string(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        "filepaths": {
                            "type": "array",
                            "items": {"type": "string"},
                            "description": "Paths of existing files, relative to the workspace."
                        }
                    },
                    "required": ["filepaths"]
                }),
                source: ToolSource::BuiltIn,
                metadata: Map::new(),
                parallel: true,
            },
            workspace,
        }
    }

    fn present(&self, args: Args) -> Result<Vec<String>, String> {
        if args.filepaths.is_empty() {
            return Err(String::from(
                "Error: `filepaths` is empty; list at least one file.",
            ));
        }
        let mut shown = Vec::new();
        for path in &args.filepaths {
            let resolved = self
                .workspace
                .resolve_existing(path)
                .map_err(|e| e.to_string())?;
            if !resolved.is_file() {
                return Err(format!("Error: `{path}` is not a file."));
            }
            let display = resolved
                .strip_prefix(self.workspace.root())
                .unwrap_or(&resolved)
                .display()
                .to_string();
            if !shown.contains(&display) {
                shown.push(display);
            }
        }
        Ok(shown)
    }
}

impl TypedTool for PresentFiles {
    type Args = Args;

    fn info(&self) -> &ToolInfo {
        &self.info
    }

    fn effect(&self) -> Effect {
        Effect::ReadOnly
    }

    fn run<'a>(&'a self, _ctx: ToolContext<'a>, args: Args) -> ToolFuture<'a> {
        Box::pin(async move {
            match self.present(args) {
                Ok(files) => ToolOutput {
                    content: format!("Presented {} file(s): {}", files.len(), files.join(", ")),
                    is_error: false,
                    state_update: Some(Box::new(StateUpdate {
                        presented_files: files,
                        ..StateUpdate::default()
                    })),
                },
                Err(message) => ToolOutput::error(message),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SandboxConfig;
    use crate::tools::CallStandalone;

    #[tokio::test]
    async fn existing_files_are_presented_and_others_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("out")).unwrap();
        std::fs::write(dir.path().join("out/report.md"), "# r").unwrap();
        let ws = Workspace::from_config(&SandboxConfig::default(), dir.path()).unwrap();
        let tool = PresentFiles::new(ws);
        let out = tool
            .call_standalone(json!({"filepaths": ["out/report.md", "./out/report.md"]}))
            .await;
        assert_eq!(out.content, "Presented 1 file(s): out/report.md");
        assert_eq!(out.state_update.unwrap().presented_files, ["out/report.md"]);
        for (args, needle) in [
            (json!({"filepaths": ["missing.txt"]}), "no such file"),
            (json!({"filepaths": ["out"]}), "not a file"),
            (
                json!({"filepaths": ["/etc/passwd"]}),
                "outside the workspace",
            ),
            (json!({"filepaths": []}), "is empty"),
            (json!({"files": ["a"]}), "invalid arguments"),
        ] {
            let out = tool.call_standalone(args).await;
            assert!(
                out.is_error && out.content.contains(needle),
                "{}",
                out.content
            );
        }
    }
}
