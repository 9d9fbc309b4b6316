//! Dialogs over the transcript: a clarification question, the thread and model pickers,
//! the `/tools`, `/mcp`, `/context` and `/help` views. Their state and keys; `dialog_view` draws them.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::input::Input;
use antler_protocol::ClarificationRequest;
use antler_protocol::Command;
use antler_protocol::ServerStatus;

/// The open dialog.
#[derive(Debug)]
pub(crate) enum Dialog {
    /// Keys and commands.
    Help {
        /// The first line shown.
        scroll: usize,
    },
    /// The model's question.
    Clarify(ClarifyDialog),
    /// A form: a server prompt's arguments, a server's elicitation.
    Form(super::form::FormDialog),
    /// A tool call waiting for the user's approval.
    Approval(super::approval::ApprovalDialog),
    /// `/resume`: stored threads.
    Threads(Picker),
    /// `/model`: configured models.
    Models(Picker),
    /// `@`: workspace files and MCP resources to attach.
    Attach(Picker),
    /// `/tools`: what the model can see (from the app's last `ToolsView`).
    Tools {
        /// The first line shown.
        scroll: usize,
        /// Waiting for the core's answer.
        loading: bool,
    },
    /// `/context`: the context ledger (from the app's last `ContextView`).
    Context {
        /// The first line shown.
        scroll: usize,
        /// Waiting for the core's answer.
        loading: bool,
    },
    /// `/mcp`: the servers (from the app's last statuses).
    Mcp {
        /// The selected server.
        selected: usize,
        /// Waiting for the core's answer.
        loading: bool,
    },
}

/// The pause a dialog that answers someone else (an approval, a server's elicitation)
/// waits for before it takes keys, so that keys typed ahead for the next message (`a`,
/// `y`, Enter) do not answer a question the user has not seen. Every key that comes
/// meanwhile starts the wait again; Esc (which refuses) works at once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Arming(u64);

impl Arming {
    /// Ticks (of ~100 ms) without a key before the dialog takes keys.
    pub(crate) const TICKS: u64 = 5;

    /// A dialog that just opened.
    pub(crate) fn opened() -> Self {
        Self(Self::TICKS)
    }

    /// Whether it takes keys.
    pub(crate) fn ready(&self) -> bool {
        self.0 == 0
    }

    /// A key came: true when the dialog must ignore it.
    pub(crate) fn holds(&mut self, key: &KeyEvent) -> bool {
        if self.0 == 0 || key.code == KeyCode::Esc {
            return false;
        }
        self.0 = Self::TICKS;
        true
    }

    /// One tick passed; true when the dialog became ready.
    pub(crate) fn tick(&mut self) -> bool {
        let was = self.0;
        self.0 = self.0.saturating_sub(1);
        was == 1
    }
}

/// A question with options and a free-text answer.
#[derive(Debug)]
pub(crate) struct ClarifyDialog {
    /// The question, and the call waiting for its answer.
    pub request: ClarificationRequest,
    /// The chosen option; `options.len()` is the free-text field.
    pub selected: usize,
    /// The free-text answer.
    pub text: Input,
}

/// A filterable list to choose one item from.
#[derive(Debug, Default)]
pub(crate) struct Picker {
    /// Everything to choose from.
    pub items: Vec<PickItem>,
    /// Typed text that narrows the list.
    pub filter: String,
    /// The selected row among the visible items.
    pub selected: usize,
    /// Waiting for the core's answer.
    pub loading: bool,
}

/// One row of a picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PickItem {
    /// What is sent when chosen.
    pub value: String,
    /// What is shown.
    pub label: String,
    /// Shown dimmed after the label.
    pub detail: String,
    /// The open thread or the model in use, marked `(current)`.
    pub current: bool,
}

/// What a key did to a dialog.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// It stays open.
    Stay,
    /// It closes.
    Close,
    /// It closes and sends this.
    Send(Command),
    /// It stays open and sends this (a reconnect).
    SendAndStay(Command),
    /// The question is answered (`None`: skipped); it closes.
    Answer(Option<String>),
    /// The `@` picker's item with this index was chosen; it closes.
    Attach(usize),
}

impl Picker {
    /// The items the filter lets through.
    pub(crate) fn visible(&self) -> Vec<&PickItem> {
        let filter = self.filter.to_lowercase();
        self.items
            .iter()
            .filter(|i| {
                filter.is_empty()
                    || i.label.to_lowercase().contains(&filter)
                    || i.value.starts_with(&filter)
            })
            .collect()
    }

    fn key(&mut self, key: KeyEvent) -> Option<String> {
        let count = self.visible().len();
        match key.code {
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down => self.selected = (self.selected + 1).min(count.saturating_sub(1)),
            KeyCode::PageUp => self.selected = self.selected.saturating_sub(10),
            KeyCode::PageDown => self.selected = (self.selected + 10).min(count.saturating_sub(1)),
            KeyCode::Enter => return self.visible().get(self.selected).map(|i| i.value.clone()),
            KeyCode::Backspace => {
                self.filter.pop();
                self.selected = 0;
            }
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                self.filter.push(c);
                self.selected = 0;
            }
            _ => {}
        }
        None
    }
}

impl Dialog {
    /// Handles a key; `mcp` are the servers the `/mcp` view lists.
    pub(crate) fn key(&mut self, key: KeyEvent, mcp: &[ServerStatus]) -> Outcome {
        if let Dialog::Form(form) = self {
            return match form.key(key) {
                super::form::FormOutcome::Stay => Outcome::Stay,
                super::form::FormOutcome::Close(None) => Outcome::Close,
                super::form::FormOutcome::Close(Some(command)) => Outcome::Send(command),
            };
        }
        if let Dialog::Approval(approval) = self {
            return approval.key(key).map_or(Outcome::Stay, Outcome::Send);
        }
        if key.code == KeyCode::Esc {
            return match self {
                Dialog::Clarify(_) => Outcome::Answer(None),
                _ => Outcome::Close,
            };
        }
        match self {
            Dialog::Help { scroll }
            | Dialog::Tools { scroll, .. }
            | Dialog::Context { scroll, .. } => {
                match key.code {
                    KeyCode::Up => *scroll = scroll.saturating_sub(1),
                    KeyCode::Down => *scroll += 1,
                    KeyCode::PageUp => *scroll = scroll.saturating_sub(10),
                    KeyCode::PageDown | KeyCode::Char(' ') => *scroll += 10,
                    KeyCode::Home => *scroll = 0,
                    KeyCode::Enter | KeyCode::Char('q') => return Outcome::Close,
                    _ => {}
                }
                Outcome::Stay
            }
            Dialog::Threads(picker) => picker
                .key(key)
                .map_or(Outcome::Stay, |id| Outcome::Send(Command::Resume(id))),
            Dialog::Models(picker) => picker
                .key(key)
                .map_or(Outcome::Stay, |m| Outcome::Send(Command::SwitchModel(m))),
            Dialog::Attach(picker) => match picker.key(key).map(|i| i.parse()) {
                Some(Ok(index)) => Outcome::Attach(index),
                _ => Outcome::Stay,
            },
            Dialog::Mcp { selected, .. } => {
                let name = |i: usize| mcp.get(i).map(|s| s.name.clone());
                match key.code {
                    KeyCode::Up => *selected = selected.saturating_sub(1),
                    KeyCode::Down => *selected = (*selected + 1).min(mcp.len().saturating_sub(1)),
                    KeyCode::Enter | KeyCode::Char('r') => {
                        if let Some(name) = name(*selected) {
                            return Outcome::SendAndStay(Command::ReconnectMcp(Some(name)));
                        }
                    }
                    KeyCode::Char('a') => return Outcome::SendAndStay(Command::ReconnectMcp(None)),
                    KeyCode::Char('l') => {
                        if let Some(server) = mcp.get(*selected).filter(|s| s.needs_login) {
                            return Outcome::Send(Command::LoginMcp(server.name.clone()));
                        }
                    }
                    KeyCode::Char('q') => return Outcome::Close,
                    _ => {}
                }
                Outcome::Stay
            }
            Dialog::Clarify(d) => d.key(key),
            Dialog::Form(_) | Dialog::Approval(_) => Outcome::Stay,
        }
    }
}

impl ClarifyDialog {
    /// A dialog for `request`, the first option selected (or the text field).
    pub(crate) fn new(request: ClarificationRequest) -> Self {
        Self {
            request,
            selected: 0,
            text: Input::default(),
        }
    }

    /// Whether the free-text field has the focus.
    pub(crate) fn typing(&self) -> bool {
        self.selected >= self.request.options.len()
    }

    /// Pasted text goes into the free-text field.
    pub(crate) fn paste(&mut self, text: &str) {
        self.selected = self.request.options.len();
        self.text.paste(text);
    }

    fn key(&mut self, key: KeyEvent) -> Outcome {
        let options = self.request.options.len();
        match key.code {
            KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Tab => self.selected = (self.selected + 1).min(options),
            KeyCode::BackTab => self.selected = self.selected.saturating_sub(1),
            KeyCode::Enter if self.typing() => {
                let answer = self.text.text().trim().to_string();
                if !answer.is_empty() {
                    return Outcome::Answer(Some(answer));
                }
            }
            KeyCode::Enter => {
                return Outcome::Answer(self.request.options.get(self.selected).cloned());
            }
            KeyCode::Char(c) if !key.modifiers.contains(KeyModifiers::CONTROL) => {
                self.selected = options;
                self.text.insert(c);
            }
            KeyCode::Backspace if self.typing() => self.text.backspace(),
            KeyCode::Left if self.typing() => self.text.left(),
            KeyCode::Right if self.typing() => self.text.right(),
            KeyCode::Char('u') if self.typing() => self.text.kill_to_start(),
            _ => {}
        }
        Outcome::Stay
    }
}
