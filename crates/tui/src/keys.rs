//! The user's input: keys, pastes and the mouse, turned into edits of the state and the
//! [`Command`]s to send.

use crossterm::event::{
    KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};

use super::app::{App, CTRL_C_WINDOW};
use super::dialogs::{Dialog, Outcome, PickItem, Picker};
use super::form::FormDialog;
use super::slash::{self, Parsed, SlashCommand, Target};
use antler_protocol::Command;

/// Lines one wheel step scrolls.
const WHEEL_LINES: isize = 3;

impl App {
    /// Handles a key; returns the commands it asks for.
    pub(crate) fn key(&mut self, key: KeyEvent) -> Vec<Command> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && key.code == KeyCode::Char('c') {
            return self.ctrl_c();
        }
        // Anything else typed after a Ctrl-C starts its two-second window afresh.
        self.ctrl_c = None;
        if self.dialog.is_some() {
            return self.dialog_key(key);
        }
        let before = self.input.text().to_string();
        let commands = self.edit_key(key, ctrl);
        if self.input.text() != before {
            self.popup_hidden = false;
            self.popup_selected = 0;
        }
        commands
    }

    /// What the slash popup offers now (none when hidden).
    pub(super) fn popup(&self) -> Vec<Target> {
        if self.popup_hidden || self.dialog.is_some() {
            return Vec::new();
        }
        slash::matches(self.input.text(), &self.prompts, &self.skills)
    }

    fn edit_key(&mut self, key: KeyEvent, ctrl: bool) -> Vec<Command> {
        let alt = key.modifiers.contains(KeyModifiers::ALT);
        let shift = key.modifiers.contains(KeyModifiers::SHIFT);
        let popup = self.popup();
        if !popup.is_empty() {
            let last = popup.len() - 1;
            match key.code {
                KeyCode::Up => self.popup_selected = self.popup_selected.saturating_sub(1),
                KeyCode::Down => self.popup_selected = (self.popup_selected + 1).min(last),
                KeyCode::Tab => {
                    let chosen = &popup[self.popup_selected.min(last)];
                    self.input.set(match chosen {
                        Target::Builtin(_) => format!("/{}", chosen.name()),
                        // A prompt's arguments follow: the popup closes at the space.
                        Target::Prompt(_) | Target::Skill(_) => format!("/{} ", chosen.name()),
                    });
                    self.popup_selected = 0;
                }
                KeyCode::Enter if !alt && !shift => {
                    let chosen = popup[self.popup_selected.min(last)].clone();
                    if let Target::Skill(skill) = &chosen {
                        // The message the skill is for follows.
                        self.input.set(format!("/{} ", skill.name));
                        self.popup_selected = 0;
                        return Vec::new();
                    }
                    self.input.take();
                    self.history.push(&format!("/{}", chosen.name()));
                    return match chosen {
                        Target::Builtin(command) => self.slash(command, ""),
                        Target::Prompt(prompt) => self.run_prompt(prompt, ""),
                        Target::Skill(_) => Vec::new(),
                    };
                }
                KeyCode::Esc => self.popup_hidden = true,
                _ => return self.plain_key(key, ctrl, alt, shift),
            }
            return Vec::new();
        }
        self.plain_key(key, ctrl, alt, shift)
    }

    fn plain_key(&mut self, key: KeyEvent, ctrl: bool, alt: bool, shift: bool) -> Vec<Command> {
        match key.code {
            KeyCode::Enter if shift || alt => self.input.insert('\n'),
            KeyCode::Enter if self.input.text().ends_with('\\') && self.input.on_last_line() => {
                self.input.end();
                self.input.backspace();
                self.input.insert('\n');
            }
            KeyCode::Enter => return self.submit(),
            KeyCode::Char('j') if ctrl => self.input.insert('\n'),
            KeyCode::Esc if self.running() => return self.cancel(),
            KeyCode::Char('d') if ctrl && self.input.is_empty() => return vec![Command::Quit],
            KeyCode::Char('o') if ctrl => {
                self.expanded = !self.expanded;
                self.transcript.set_expanded(self.expanded);
            }
            KeyCode::Up if self.input.on_first_line() => {
                let current = self.input.text().to_string();
                if let Some(previous) = self.history.previous(&current) {
                    self.input.set(previous);
                }
            }
            KeyCode::Down if self.input.on_last_line() => {
                if let Some(next) = self.history.next() {
                    self.input.set(next);
                }
            }
            KeyCode::Up => self.input.up(),
            KeyCode::Down => self.input.down(),
            KeyCode::PageUp => self.scroll_by(-self.page()),
            KeyCode::PageDown => self.scroll_by(self.page()),
            KeyCode::Home if ctrl => self.scroll = Some(0),
            KeyCode::End if ctrl || self.input.is_empty() => self.scroll = None,
            KeyCode::Home => self.input.home(),
            KeyCode::End => self.input.end(),
            KeyCode::Left if ctrl || alt => self.input.word_left(),
            KeyCode::Right if ctrl || alt => self.input.word_right(),
            KeyCode::Left => self.input.left(),
            KeyCode::Right => self.input.right(),
            KeyCode::Backspace if ctrl || alt => self.input.delete_word(),
            KeyCode::Backspace => self.input.backspace(),
            KeyCode::Delete => self.input.delete(),
            KeyCode::Char('a') if ctrl => self.input.home(),
            KeyCode::Char('e') if ctrl => self.input.end(),
            KeyCode::Char('u') if ctrl => self.input.kill_to_start(),
            KeyCode::Char('k') if ctrl => self.input.kill_to_end(),
            KeyCode::Char('w') if ctrl => self.input.delete_word(),
            KeyCode::Char('b') if alt => self.input.word_left(),
            KeyCode::Char('f') if alt => self.input.word_right(),
            KeyCode::Char('@') if !ctrl && !alt && self.at_word_start() => {
                self.input.insert('@');
                self.dialog = Some(Dialog::Attach(Picker {
                    loading: true,
                    ..Picker::default()
                }));
                return vec![Command::ListAttachments];
            }
            KeyCode::Char(c) if !ctrl && !alt => self.input.insert(c),
            _ => {}
        }
        Vec::new()
    }

    /// Whether the cursor is at the start of a word (where `@` opens the picker; inside
    /// a word, as in an email address, it is just typed).
    fn at_word_start(&self) -> bool {
        let before = &self.input.text()[..self.input.cursor()];
        before.chars().last().is_none_or(char::is_whitespace)
    }

    /// Ctrl-C: closes a dialog, else cancels the run (or, while the session starts, takes
    /// back the messages waiting for it), else clears the input; a second one within two
    /// seconds, or one on an empty idle line, quits.
    fn ctrl_c(&mut self) -> Vec<Command> {
        if let Some(dialog) = &mut self.dialog {
            if matches!(dialog, Dialog::Clarify(_)) {
                return self.answer(None);
            }
            // A form closes as Esc closes it (an elicitation is cancelled, a call denied).
            let esc = KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE);
            if matches!(dialog, Dialog::Form(_) | Dialog::Approval(_)) {
                return self.dialog_key(esc);
            }
            self.dialog = None;
            return Vec::new();
        }
        if self
            .ctrl_c
            .is_some_and(|at| self.tick.saturating_sub(at) <= CTRL_C_WINDOW)
        {
            return self.quit_by_ctrl_c();
        }
        self.ctrl_c = Some(self.tick);
        if self.running() {
            self.flash("Cancelling · Ctrl-C again to quit");
            return self.cancel();
        }
        if self.starting.is_some() && !self.queued.is_empty() {
            // Like cancelling a run: what waits for the session goes back into the box.
            self.unqueue();
            self.flash("Not sent · Ctrl-C again to quit");
            return Vec::new();
        }
        if !self.input.is_empty() {
            self.input.take();
            self.flash("Ctrl-C again to quit");
            return Vec::new();
        }
        self.quit_by_ctrl_c()
    }

    /// Quits; before the session is ready, that interrupts its start.
    fn quit_by_ctrl_c(&mut self) -> Vec<Command> {
        self.interrupted = self.starting.is_some();
        vec![Command::Quit]
    }

    fn cancel(&mut self) -> Vec<Command> {
        self.run.cancelled = true;
        self.run.awaiting = false;
        vec![Command::Cancel]
    }

    fn submit(&mut self) -> Vec<Command> {
        let text = self.input.text().trim_end().to_string();
        if text.trim().is_empty() {
            return Vec::new();
        }
        match slash::parse(&text, &self.prompts, &self.skills) {
            Parsed::Command(command, argument) => {
                self.history.push(&text);
                self.input.take();
                self.slash(command, &argument)
            }
            Parsed::Prompt(prompt, rest) => {
                if self.running() || self.starting.is_some() {
                    self.flash("A prompt runs once the current run is over");
                    return Vec::new();
                }
                self.history.push(&text);
                self.input.take();
                self.run_prompt(prompt, &rest)
            }
            Parsed::Skill(name, rest) => {
                if self.running() || self.starting.is_some() {
                    self.flash("A skill runs once the current run is over");
                    return Vec::new();
                }
                self.history.push(&text);
                self.input.take();
                self.send_awaiting(Command::RunSkill { name, text: rest })
            }
            Parsed::Unknown(name) => {
                self.flash(&format!("Unknown command /{name} · /help lists them"));
                Vec::new()
            }
            Parsed::Message => {
                let attached: Vec<_> = std::mem::take(&mut self.attached)
                    .into_iter()
                    .filter(|a| text.contains(&a.mention()))
                    .collect();
                if !attached.is_empty() {
                    if self.running() || self.starting.is_some() {
                        self.attached = attached;
                        self.flash("A message with attachments is sent once the run is over");
                        return Vec::new();
                    }
                    self.history.push(&text);
                    self.input.take();
                    return self.send_awaiting(Command::SubmitWith {
                        text,
                        attachments: attached,
                    });
                }
                self.history.push(&text);
                self.input.take();
                if self.running() || self.starting.is_some() {
                    self.queued.push_back(text);
                    Vec::new()
                } else {
                    self.send(text)
                }
            }
        }
    }

    /// Opens the picker of stored threads (`/resume`, `--resume` without an id).
    pub(crate) fn pick_thread(&mut self) -> Vec<Command> {
        self.dialog = Some(Dialog::Threads(Picker {
            loading: true,
            ..Picker::default()
        }));
        vec![Command::ListThreads]
    }

    /// Runs a slash command.
    fn slash(&mut self, command: SlashCommand, argument: &str) -> Vec<Command> {
        match command {
            SlashCommand::Help => self.dialog = Some(Dialog::Help { scroll: 0 }),
            SlashCommand::New => return vec![Command::NewThread],
            SlashCommand::Resume if !argument.is_empty() => {
                return vec![Command::Resume(argument.to_string())];
            }
            SlashCommand::Resume => return self.pick_thread(),
            SlashCommand::Model if !argument.is_empty() => {
                return self.switch_model(argument.to_string());
            }
            SlashCommand::Model => {
                let items = self
                    .info
                    .models
                    .iter()
                    .map(|m| PickItem {
                        value: m.name.clone(),
                        label: m.name.clone(),
                        detail: m.detail.clone(),
                        current: m.current,
                    })
                    .collect();
                let selected = self.info.models.iter().position(|m| m.current).unwrap_or(0);
                self.dialog = Some(Dialog::Models(Picker {
                    items,
                    selected,
                    ..Picker::default()
                }));
            }
            SlashCommand::Tools => {
                self.dialog = Some(Dialog::Tools {
                    scroll: 0,
                    loading: true,
                });
                return vec![Command::ShowTools];
            }
            SlashCommand::Mcp => {
                self.dialog = Some(Dialog::Mcp {
                    selected: 0,
                    loading: true,
                });
                return vec![Command::ShowMcp];
            }
            SlashCommand::Context => {
                self.dialog = Some(Dialog::Context {
                    scroll: 0,
                    loading: true,
                });
                return vec![Command::ShowContext];
            }
            SlashCommand::Skills => self
                .transcript
                .push(super::transcript::Entry::Info(skills_text(&self.skills))),
            SlashCommand::Clear => {
                self.transcript.clear();
                self.scroll = None;
            }
            SlashCommand::Quit => return vec![Command::Quit],
        }
        Vec::new()
    }

    /// Runs a server prompt with the arguments on its line; missing required ones are
    /// asked for in a form first.
    fn run_prompt(&mut self, prompt: antler_protocol::PromptInfo, rest: &str) -> Vec<Command> {
        let arguments = slash::prompt_arguments(&prompt, rest);
        let missing = prompt
            .arguments
            .iter()
            .any(|a| a.required && arguments.get(&a.name).is_none_or(|v| v.trim().is_empty()));
        if missing {
            self.dialog = Some(Dialog::Form(FormDialog::prompt(prompt, &arguments)));
            return Vec::new();
        }
        self.send_awaiting(Command::RunPrompt {
            server: prompt.server,
            name: prompt.name,
            arguments,
        })
    }

    /// Sends a message the core expands first (a server prompt, attachments): the run
    /// indicator is on until its run ends (or the expansion fails); what the user sees of
    /// it arrives as the user's turn.
    fn send_awaiting(&mut self, command: Command) -> Vec<Command> {
        self.scroll = None;
        self.run.awaiting = true;
        self.run.cancelled = false;
        self.run.started = self.tick;
        vec![command]
    }

    /// Asks for another model; the transcript says so once the session took it (a
    /// failure is only the error).
    fn switch_model(&mut self, model: String) -> Vec<Command> {
        self.switching = Some(model.clone());
        vec![Command::SwitchModel(model)]
    }

    fn dialog_key(&mut self, key: KeyEvent) -> Vec<Command> {
        let Some(dialog) = self.dialog.as_mut() else {
            return Vec::new();
        };
        match dialog.key(key, &self.mcp) {
            Outcome::Stay => {}
            Outcome::Close => {
                self.dialog = None;
                self.next_request();
            }
            Outcome::Send(Command::SwitchModel(model)) => {
                self.dialog = None;
                return self.switch_model(model);
            }
            Outcome::Send(command @ Command::RunPrompt { .. }) => {
                self.dialog = None;
                return self.send_awaiting(command);
            }
            Outcome::Send(command @ (Command::Elicit { .. } | Command::Approve { .. })) => {
                self.dialog = None;
                self.next_request();
                return vec![command];
            }
            Outcome::Send(command) => {
                self.dialog = None;
                return vec![command];
            }
            Outcome::SendAndStay(command) => {
                if let Some(Dialog::Mcp { loading, .. }) = &mut self.dialog {
                    *loading = true;
                }
                return vec![command];
            }
            Outcome::Answer(answer) => return self.answer(answer),
            Outcome::Attach(index) => {
                self.dialog = None;
                if let Some(chosen) = self.attachable.get(index).cloned() {
                    // The `@` is typed already.
                    let mention = chosen.mention();
                    for c in mention.chars().skip(1) {
                        self.input.insert(c);
                    }
                    self.input.insert(' ');
                    self.attached.push(chosen);
                }
            }
        }
        Vec::new()
    }

    /// Pasted text (bracketed paste): into the question's answer field when one is open,
    /// else into the input box.
    pub(crate) fn paste(&mut self, text: &str) {
        match &mut self.dialog {
            Some(Dialog::Clarify(d)) => d.paste(text),
            Some(Dialog::Approval(d)) => d.paste(text),
            Some(Dialog::Form(form)) => form.paste(text),
            Some(_) => {}
            None => {
                self.input.paste(text);
                self.popup_hidden = false;
            }
        }
    }

    /// The wheel scrolls (the transcript, or the open view); a click on a card or on
    /// reasoning expands or collapses it. True when the screen changed.
    pub(crate) fn mouse(&mut self, event: MouseEvent) -> bool {
        let delta = match event.kind {
            MouseEventKind::ScrollUp => -WHEEL_LINES,
            MouseEventKind::ScrollDown => WHEEL_LINES,
            MouseEventKind::Down(MouseButton::Left) => {
                return self.dialog.is_none() && self.click(event.column, event.row);
            }
            _ => return false,
        };
        match &mut self.dialog {
            Some(Dialog::Help { scroll }) | Some(Dialog::Tools { scroll, .. }) => {
                *scroll = scroll.saturating_add_signed(delta);
            }
            Some(_) => {}
            None => self.scroll_by(delta),
        }
        true
    }

    fn click(&mut self, column: u16, row: u16) -> bool {
        let area = self.view.area;
        if !(area.x..area.x + area.width).contains(&column)
            || !(area.y..area.y + area.height).contains(&row)
        {
            return false;
        }
        let line = self.view.top + usize::from(row - area.y);
        let hit = self
            .view
            .spans
            .iter()
            .position(|&(start, height)| (start..start + height).contains(&line));
        hit.is_some_and(|index| self.transcript.toggle(index))
    }

    /// A page of transcript: its height less two lines of overlap.
    fn page(&self) -> isize {
        isize::try_from(usize::from(self.view.area.height).saturating_sub(2).max(1)).unwrap_or(1)
    }

    /// Scrolls the transcript; reaching the bottom follows new output again.
    pub(super) fn scroll_by(&mut self, delta: isize) {
        let height = usize::from(self.view.area.height);
        let bottom = self.view.total.saturating_sub(height);
        let top = self
            .scroll
            .unwrap_or(bottom)
            .saturating_add_signed(delta)
            .min(bottom);
        self.scroll = (top < bottom).then_some(top);
    }
}

/// What `/skills` shows: each usable skill with its description, then the others and why.
fn skills_text(skills: &[antler_protocol::SkillInfo]) -> String {
    if skills.is_empty() {
        return String::from(
            "No skills. Add one as ~/.config/antler/skills/NAME/SKILL.md or .agents/skills/NAME/SKILL.md.",
        );
    }
    let mut text = String::from("Skills (/NAME message runs the message with one):");
    for skill in skills.iter().filter(|s| s.usable) {
        text.push_str(&format!(
            "\n  /{} · {} skill · {}",
            skill.name, skill.source, skill.description
        ));
    }
    for skill in skills.iter().filter(|s| !s.usable) {
        text.push_str(&format!("\n  {} · not used: {}", skill.name, skill.reason));
    }
    text
}
