//! The form dialog: fields to fill in, checked before anything is sent. It asks for a
//! server prompt's missing arguments and answers a server's elicitation (a form, or a URL
//! to open).

use std::collections::BTreeMap;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::input::Input;
use antler_protocol::{
    Command, ElicitationAnswer, ElicitationForm, ElicitationRequest, FieldKind, FormField,
    PromptInfo, form_values,
};

/// What the filled-in form is for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Purpose {
    /// The arguments of a server prompt; sent as [`Command::RunPrompt`].
    Prompt(PromptInfo),
    /// A server's elicitation; answered with [`Command::Elicit`].
    Elicitation(ElicitationRequest),
}

/// A form being filled in.
#[derive(Debug)]
pub(crate) struct FormDialog {
    /// Decides what submitting sends: `RunPrompt` or `Elicit`.
    pub purpose: Purpose,
    /// Its fields (none for a URL).
    pub fields: Vec<FormField>,
    /// Each field's text as typed.
    pub values: Vec<Input>,
    /// The field with the focus.
    pub selected: usize,
    /// Why the last submit was refused.
    pub error: Option<String>,
    /// The wait before an elicitation takes keys (a prompt's own form takes them at once).
    pub arming: super::dialogs::Arming,
}

/// What a key did to a form.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum FormOutcome {
    /// It stays open.
    Stay,
    /// It closes, sending this (if anything).
    Close(Option<Command>),
}

impl FormDialog {
    /// Asks for the arguments of `prompt`, starting from those `given`.
    pub(crate) fn prompt(prompt: PromptInfo, given: &BTreeMap<String, String>) -> Self {
        let fields: Vec<FormField> = prompt
            .arguments
            .iter()
            .map(|a| FormField {
                name: a.name.clone(),
                title: a.name.clone(),
                description: a.description.clone(),
                required: a.required,
                kind: FieldKind::Text {
                    min_chars: None,
                    max_chars: None,
                    format: None,
                },
                default: given.get(&a.name).cloned(),
            })
            .collect();
        let selected = fields
            .iter()
            .position(|f| f.required && f.default.as_deref().is_none_or(str::is_empty))
            .unwrap_or(0);
        Self::new(Purpose::Prompt(prompt), fields, selected)
    }

    /// Answers `request`.
    pub(crate) fn elicitation(request: ElicitationRequest) -> Self {
        let fields = match &request.form {
            ElicitationForm::Form { fields } => fields.clone(),
            ElicitationForm::Url { .. } => Vec::new(),
        };
        Self {
            arming: super::dialogs::Arming::opened(),
            ..Self::new(Purpose::Elicitation(request), fields, 0)
        }
    }

    fn new(purpose: Purpose, fields: Vec<FormField>, selected: usize) -> Self {
        let values = fields
            .iter()
            .map(|f| {
                let mut input = Input::default();
                input.set(f.default.clone().unwrap_or_default());
                input
            })
            .collect();
        Self {
            purpose,
            fields,
            values,
            selected,
            error: None,
            arming: Default::default(),
        }
    }

    /// The command that answers the form with `answer` (a prompt has no answer to send
    /// when dismissed).
    fn answered(&self, answer: ElicitationAnswer) -> Option<Command> {
        match &self.purpose {
            Purpose::Elicitation(request) => Some(Command::Elicit {
                id: request.id,
                answer,
            }),
            Purpose::Prompt(_) => None,
        }
    }

    /// Pasted text goes into the focused field.
    pub(crate) fn paste(&mut self, text: &str) {
        if let Some(input) = self.values.get_mut(self.selected) {
            input.paste(&text.replace(['\n', '\r'], " "));
        }
    }

    /// Checks every field and makes the command that sends them; a wrong field takes the
    /// focus and says why.
    fn submit(&mut self) -> FormOutcome {
        let texts: Vec<String> = self.values.iter().map(|i| i.text().to_string()).collect();
        match form_values(&self.fields, &texts) {
            Err((index, why)) => {
                self.selected = index;
                self.error = Some(why);
                FormOutcome::Stay
            }
            Ok(values) => match &self.purpose {
                Purpose::Elicitation(_) => {
                    FormOutcome::Close(self.answered(ElicitationAnswer::Accept(values)))
                }
                Purpose::Prompt(prompt) => {
                    let arguments = values
                        .into_iter()
                        .map(|(k, v)| (k, v.as_str().unwrap_or_default().to_string()))
                        .collect();
                    FormOutcome::Close(Some(Command::RunPrompt {
                        server: prompt.server.clone(),
                        name: prompt.name.clone(),
                        arguments,
                    }))
                }
            },
        }
    }

    /// Cycles a choice or flips a yes/no field by `step`.
    fn cycle(&mut self, step: isize) -> bool {
        let (Some(field), Some(input)) = (
            self.fields.get(self.selected),
            self.values.get_mut(self.selected),
        ) else {
            return false;
        };
        let options: Vec<String> = match &field.kind {
            FieldKind::Boolean => vec!["yes".into(), "no".into()],
            FieldKind::Choice { values, .. } => values.clone(),
            _ => return false,
        };
        if options.is_empty() {
            return true;
        }
        let current = match (&field.kind, input.text()) {
            (FieldKind::Boolean, "true") => Some(0),
            (FieldKind::Boolean, "false") => Some(1),
            (_, text) => options.iter().position(|o| o == text),
        };
        let n = options.len() as isize;
        let next = current.map_or(0, |c| (c as isize + step).rem_euclid(n)) as usize;
        input.set(options[next].clone());
        true
    }

    /// Esc cancels, Ctrl-D declines an elicitation, Enter submits; Tab and the arrows move or
    /// cycle a choice, and other keys edit the field.
    pub(crate) fn key(&mut self, key: KeyEvent) -> FormOutcome {
        if self.arming.holds(&key) {
            return FormOutcome::Stay;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let last = self.fields.len().saturating_sub(1);
        match key.code {
            KeyCode::Esc => return FormOutcome::Close(self.answered(ElicitationAnswer::Cancel)),
            KeyCode::Char('d') if ctrl && matches!(self.purpose, Purpose::Elicitation(_)) => {
                return FormOutcome::Close(self.answered(ElicitationAnswer::Decline));
            }
            KeyCode::Enter => return self.submit(),
            KeyCode::Tab | KeyCode::Down => self.selected = (self.selected + 1).min(last),
            KeyCode::BackTab | KeyCode::Up => self.selected = self.selected.saturating_sub(1),
            KeyCode::Left | KeyCode::Right | KeyCode::Char(' ')
                if self.cycle(if key.code == KeyCode::Left { -1 } else { 1 }) => {}
            _ => {
                let Some(input) = self.values.get_mut(self.selected) else {
                    return FormOutcome::Stay;
                };
                match key.code {
                    KeyCode::Char('u') if ctrl => input.kill_to_start(),
                    KeyCode::Char(c) if !ctrl => input.insert(c),
                    KeyCode::Backspace => input.backspace(),
                    KeyCode::Delete => input.delete(),
                    KeyCode::Left => input.left(),
                    KeyCode::Right => input.right(),
                    KeyCode::Home => input.home(),
                    KeyCode::End => input.end(),
                    _ => return FormOutcome::Stay,
                }
                self.error = None;
            }
        }
        FormOutcome::Stay
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::KeyEvent;
    use serde_json::json;

    use super::*;
    use antler_protocol::PromptArgumentInfo;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    /// A form past its wait, as after a pause.
    fn ready(mut form: FormDialog) -> FormDialog {
        form.arming = Default::default();
        form
    }

    fn type_text(form: &mut FormDialog, text: &str) {
        for c in text.chars() {
            form.key(key(KeyCode::Char(c)));
        }
    }

    fn request() -> ElicitationRequest {
        let field = |name: &str, kind, required| FormField {
            name: name.into(),
            title: name.into(),
            description: String::new(),
            required,
            kind,
            default: None,
        };
        ElicitationRequest {
            id: 7,
            server: "fx".into(),
            message: "Who are you?".into(),
            form: ElicitationForm::Form {
                fields: vec![
                    field(
                        "name",
                        FieldKind::Text {
                            min_chars: None,
                            max_chars: None,
                            format: None,
                        },
                        true,
                    ),
                    field(
                        "age",
                        FieldKind::Integer {
                            min: Some(0),
                            max: None,
                        },
                        false,
                    ),
                    field(
                        "colour",
                        FieldKind::Choice {
                            values: vec!["red".into(), "green".into()],
                            labels: vec!["Red".into(), "Green".into()],
                        },
                        false,
                    ),
                    field("subscribe", FieldKind::Boolean, false),
                ],
            },
        }
    }

    #[test]
    fn an_elicitation_is_checked_then_accepted_declined_or_cancelled() {
        let mut form = ready(FormDialog::elicitation(request()));
        assert_eq!(form.key(key(KeyCode::Enter)), FormOutcome::Stay);
        assert_eq!(form.error.as_deref(), Some("name is required"));
        type_text(&mut form, "Ada");
        form.key(key(KeyCode::Tab));
        type_text(&mut form, "-3");
        assert_eq!(form.key(key(KeyCode::Enter)), FormOutcome::Stay);
        assert_eq!(
            (form.selected, form.error.as_deref()),
            (1, Some("age must be at least 0"))
        );
        form.key(key(KeyCode::Backspace));
        form.key(key(KeyCode::Backspace));
        type_text(&mut form, "36");
        form.key(key(KeyCode::Tab));
        form.key(key(KeyCode::Right));
        form.key(key(KeyCode::Right));
        form.key(key(KeyCode::Tab));
        form.key(key(KeyCode::Char(' ')));
        let FormOutcome::Close(Some(Command::Elicit { id, answer })) =
            form.key(key(KeyCode::Enter))
        else {
            panic!("accepted");
        };
        assert_eq!(id, 7);
        assert_eq!(
            answer,
            ElicitationAnswer::Accept(
                json!({"name": "Ada", "age": 36, "colour": "green", "subscribe": true})
                    .as_object()
                    .cloned()
                    .unwrap()
            )
        );
        let mut form = ready(FormDialog::elicitation(request()));
        assert_eq!(
            form.key(KeyEvent::new(KeyCode::Char('d'), KeyModifiers::CONTROL)),
            FormOutcome::Close(Some(Command::Elicit {
                id: 7,
                answer: ElicitationAnswer::Decline
            }))
        );
        let mut form = ready(FormDialog::elicitation(request()));
        assert_eq!(
            form.key(key(KeyCode::Esc)),
            FormOutcome::Close(Some(Command::Elicit {
                id: 7,
                answer: ElicitationAnswer::Cancel
            }))
        );
    }

    #[test]
    fn a_prompts_missing_arguments_are_asked_for() {
        let prompt = PromptInfo {
            server: "fx".into(),
            name: "greet".into(),
            description: String::new(),
            arguments: vec![
                PromptArgumentInfo {
                    name: "style".into(),
                    description: String::new(),
                    required: false,
                },
                PromptArgumentInfo {
                    name: "name".into(),
                    description: String::new(),
                    required: true,
                },
            ],
        };
        let given = BTreeMap::from([("style".to_string(), "warmly".to_string())]);
        let mut form = FormDialog::prompt(prompt, &given);
        assert_eq!(form.selected, 1, "the first missing one has the focus");
        type_text(&mut form, "Bo");
        assert_eq!(
            form.key(key(KeyCode::Enter)),
            FormOutcome::Close(Some(Command::RunPrompt {
                server: "fx".into(),
                name: "greet".into(),
                arguments: BTreeMap::from([
                    ("name".to_string(), "Bo".to_string()),
                    ("style".to_string(), "warmly".to_string())
                ]),
            }))
        );
        assert_eq!(form.key(key(KeyCode::Esc)), FormOutcome::Close(None));
    }
}
