//! `antler skills list` and `antler skills show NAME`.

use super::context::CommandContext;
use super::error::CliError;
use super::output::{to_json, write_stdout};
use super::{Exit, SkillsCommand};

/// Runs `antler skills ...`.
pub(super) fn run(command: SkillsCommand, ctx: CommandContext<'_>) -> Exit {
    let CommandContext {
        model,
        paths: _,
        cwd: _,
        env: _,
        trust: _,
    } = ctx;
    let result = (|| {
        let setup = ctx.setup()?;
        let skills = setup.skills();
        let text = match command {
            SkillsCommand::List(args) => {
                let budget = setup.skills_budget(model);
                let usable: Vec<_> = skills.usable().collect();
                let listing = crate::skills::listing::listing(&usable, budget, true);
                let report = crate::ui::skills::report(skills, &listing, budget);
                if args.json {
                    to_json(&report)
                } else {
                    crate::ui::skills::table(&report)
                }
            }
            SkillsCommand::Show(args) => {
                let skill = skills
                    .get(&args.name)
                    .or_else(|| skills.skills.iter().find(|s| s.name == args.name))
                    .ok_or_else(|| {
                        CliError::usage(crate::skills::load::unknown(skills, &args.name))
                    })?;
                let text = crate::base::bounded_read::read(
                    &skill.file,
                    crate::skills::MAX_FILE_BYTES,
                    "a SKILL.md",
                )
                .map_err(|e| CliError::failure(format!("{}: {e}", skill.file.display())))?;
                crate::ui::skills::show(skill, &String::from_utf8_lossy(&text))
            }
        };
        write_stdout(&text)?;
        Ok::<_, CliError>(Exit::Success)
    })();
    result.unwrap_or_else(CliError::report)
}
