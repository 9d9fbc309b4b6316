use std::path::Path;

use super::*;

fn write_skill(root: &Path, name: &str, frontmatter: &str, body: &str) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\n{frontmatter}\n---\n{body}"),
    )
    .unwrap();
}

fn good(root: &Path, name: &str, description: &str) {
    write_skill(
        root,
        name,
        &format!("name: {name}\ndescription: {description}"),
        "Do it.\n",
    );
}

fn trusted(_: &ProjectSkill) -> Result<(), String> {
    Ok(())
}

fn untrusted(_: &ProjectSkill) -> Result<(), String> {
    Err(String::from("not trusted yet"))
}

fn none(_: &str) -> Option<String> {
    None
}

#[test]
fn precedence_is_project_then_user_then_paths_and_shadowing_is_said() {
    let tmp = tempfile::tempdir().unwrap();
    let (project, user, extra) = (
        tmp.path().join("p"),
        tmp.path().join("u"),
        tmp.path().join("x"),
    );
    good(&project, "review", "project review");
    good(&user, "review", "user review");
    good(&user, "notes", "user notes");
    good(&extra, "notes", "path notes");
    good(&extra, "pdf", "path pdf");
    let roots = SkillRoots {
        project: vec![project.clone()],
        user: Some(user.clone()),
        paths: vec![extra.clone()],
    };
    let set = discover(&roots, &none, &trusted);
    assert!(set.errors.is_empty(), "{:?}", set.errors);
    let usable: Vec<(&str, SkillSource)> =
        set.usable().map(|s| (s.name.as_str(), s.source)).collect();
    assert_eq!(
        usable,
        [
            ("review", SkillSource::Project),
            ("notes", SkillSource::User),
            ("pdf", SkillSource::Path)
        ]
    );
    assert_eq!(set.get("review").unwrap().description, "project review");
    let shadowed: Vec<_> = set
        .skills
        .iter()
        .filter(|s| matches!(s.state, SkillState::Shadowed { .. }))
        .map(|s| (s.name.as_str(), s.source))
        .collect();
    assert_eq!(
        shadowed,
        [("review", SkillSource::User), ("notes", SkillSource::Path)]
    );
    assert!(set.get("../review").is_none());
}

#[test]
fn bad_skills_are_skipped_with_their_reason_and_the_rest_load() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("skills");
    good(&root, "fine", "works");
    write_skill(&root, "broken", "name: broken\ndescription: [unclosed", "");
    write_skill(&root, "wrong-name", "name: other\ndescription: d", "");
    std::fs::create_dir_all(root.join("nofront")).unwrap();
    std::fs::write(root.join("nofront/SKILL.md"), "# just markdown\n").unwrap();
    // 100 MB SKILL.md: refused by its size, never read.
    std::fs::create_dir_all(root.join("huge")).unwrap();
    let huge = std::fs::File::create(root.join("huge/SKILL.md")).unwrap();
    huge.set_len(100 << 20).unwrap();
    // A link to a private folder inside a skill.
    good(&root, "keys", "steals keys");
    std::fs::create_dir_all(tmp.path().join("ssh")).unwrap();
    std::fs::write(tmp.path().join("ssh/id_rsa"), "KEY").unwrap();
    std::os::unix::fs::symlink(tmp.path().join("ssh"), root.join("keys/ssh")).unwrap();
    // A SKILL.md that is a link out.
    std::fs::create_dir_all(root.join("linked")).unwrap();
    std::fs::write(
        tmp.path().join("outside.md"),
        "---\nname: linked\ndescription: d\n---\n",
    )
    .unwrap();
    std::os::unix::fs::symlink(tmp.path().join("outside.md"), root.join("linked/SKILL.md"))
        .unwrap();
    let roots = SkillRoots {
        user: Some(root.clone()),
        ..Default::default()
    };
    let set = discover(&roots, &none, &trusted);
    let names: Vec<&str> = set.usable().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["fine"]);
    let errors: Vec<String> = set.errors.iter().map(ToString::to_string).collect();
    let find = |part: &str| {
        errors
            .iter()
            .find(|e| e.contains(part))
            .unwrap_or_else(|| panic!("no error with {part}: {errors:#?}"))
            .clone()
    };
    assert!(find("broken/SKILL.md").contains("not valid YAML"));
    assert!(find("wrong-name/SKILL.md:2: name:").contains("not the name of its folder"));
    assert!(find("nofront/SKILL.md:1").contains("no frontmatter"));
    assert!(find("huge/SKILL.md").contains("at most 1024 KiB"));
    assert!(find("keys/ssh").contains("leads out of the skill's folder"));
    assert!(find("linked/SKILL.md").contains("leads out of the skill's folder"));
    assert!(errors.iter().all(|e| e.ends_with("the skill is skipped")));
    assert!(
        set.bytes_read < 4096,
        "only frontmatter is read: {}",
        set.bytes_read
    );
}

#[test]
fn project_skills_need_trust_and_disabled_ones_stay_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join(".agents/skills");
    good(&project, "planted", "do what I say");
    let user = tmp.path().join("u");
    good(&user, "planted", "the user's own");
    good(&user, "off", "turned off");
    let roots = SkillRoots {
        project: vec![project],
        user: Some(user),
        ..Default::default()
    };
    let disabled = |name: &str| (name == "off").then(|| String::from("skills.disabled"));
    let set = discover(&roots, &disabled, &untrusted);
    let planted = &set.skills[0];
    assert_eq!(planted.source, SkillSource::Project);
    assert_eq!(
        planted.state,
        SkillState::Untrusted {
            reason: "not trusted yet".into()
        }
    );
    assert!(planted.sha256.is_some());
    // An untrusted skill shadows nothing: the user's own of that name is used.
    assert_eq!(set.get("planted").unwrap().source, SkillSource::User);
    assert!(set.get("off").is_none());
    assert!(
        set.skills
            .iter()
            .any(|s| s.name == "off" && matches!(s.state, SkillState::Disabled { .. }))
    );
}

#[test]
fn project_roots_run_from_the_workspace_up_to_the_repository() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let work = repo.join("pkg");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(repo.join(".claude/skills")).unwrap();
    std::fs::create_dir_all(work.join(".agents/skills")).unwrap();
    std::fs::create_dir_all(tmp.path().join(".agents/skills")).unwrap();
    assert_eq!(
        project_roots(&work),
        [work.join(".agents/skills"), repo.join(".claude/skills")]
    );
}

#[test]
fn a_skill_seen_through_two_roots_counts_once() {
    let tmp = tempfile::tempdir().unwrap();
    let agents = tmp.path().join(".agents/skills");
    good(&agents, "one", "d");
    std::fs::create_dir_all(tmp.path().join(".claude")).unwrap();
    std::os::unix::fs::symlink(&agents, tmp.path().join(".claude/skills")).unwrap();
    let roots = SkillRoots {
        project: project_roots(tmp.path()),
        ..Default::default()
    };
    let set = discover(&roots, &none, &trusted);
    assert_eq!(set.skills.len(), 1, "{:?}", set.skills);
}

#[test]
fn a_project_skill_folder_linking_out_of_the_project_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let agents = tmp.path().join("proj/.agents/skills");
    std::fs::create_dir_all(&agents).unwrap();
    good(&tmp.path().join("elsewhere"), "away", "d");
    std::os::unix::fs::symlink(tmp.path().join("elsewhere/away"), agents.join("away")).unwrap();
    let roots = SkillRoots {
        project: vec![agents],
        ..Default::default()
    };
    let set = discover(&roots, &none, &trusted);
    assert!(set.skills.is_empty());
    assert!(
        set.errors[0]
            .to_string()
            .contains("out of the project's skills folder")
    );
}
