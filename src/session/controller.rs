//! The chat's controller: turns a front-end's [`Command`]s into calls on the [`Session`]
//! and sends back [`Update`]s. One run at a time; while it runs, `Cancel`, `Quit`,
//! `Answer` and `ShowMcp` act at once and other commands wait for the run to end.

use std::collections::VecDeque;

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio_util::sync::CancellationToken;

use super::handle::Session;
use crate::protocol::{ClarificationRequest, Command, Event, Update};

/// Serves `commands` on `session` until `Quit` or until the front-end goes away, then
/// closes the session. `questions` are `ask_clarification`'s, passed on as updates.
pub async fn serve(
    session: Session,
    commands: UnboundedReceiver<Command>,
    questions: Option<UnboundedReceiver<ClarificationRequest>>,
    updates: UnboundedSender<Update>,
) {
    if let Some(mut questions) = questions {
        // Ends with the session (when its broker is dropped).
        let forward = updates.clone();
        tokio::spawn(async move {
            while let Some(question) = questions.recv().await {
                let _ = forward.send(Update::Clarify(question));
            }
        });
    }
    let mut controller = Controller {
        session,
        updates,
        commands,
        queued: VecDeque::new(),
    };
    controller.run().await;
    controller.session.close().await;
}

struct Controller {
    session: Session,
    updates: UnboundedSender<Update>,
    commands: UnboundedReceiver<Command>,
    /// Commands that arrived during a run, to handle after it.
    queued: VecDeque<Command>,
}

impl Controller {
    async fn run(&mut self) {
        self.info(false).await;
        if let Some(history) = self.session.history() {
            self.send(Update::History(history.to_vec()));
        }
        loop {
            let command = match self.queued.pop_front() {
                Some(command) => command,
                None => match self.commands.recv().await {
                    Some(command) => command,
                    None => return,
                },
            };
            match command {
                Command::Quit => return,
                Command::Submit(text) => {
                    if self.submit(text).await {
                        return;
                    }
                }
                other => self.handle(other).await,
            }
        }
    }

    fn send(&self, update: Update) {
        // A front-end that went away stops the session at its next command.
        let _ = self.updates.send(update);
    }

    fn error(&self, message: impl Into<String>) {
        self.send(Update::Error(message.into()));
    }

    async fn info(&self, running: bool) {
        let info = self.session.info(running).await;
        self.send(Update::Info(info));
    }

    /// Everything but `Submit` and `Quit`.
    async fn handle(&mut self, command: Command) {
        match command {
            Command::Cancel | Command::Submit(_) | Command::Quit => {}
            Command::Answer { call_id, answer } => {
                if let Some(clarifications) = self.session.clarifications() {
                    clarifications.answer(&call_id, answer);
                }
            }
            Command::NewThread => {
                self.session.new_thread();
                self.send(Update::History(Vec::new()));
                self.info(false).await;
            }
            Command::Resume(id) => match self.session.resume(&id) {
                Ok(()) => {
                    let history = self.session.history().unwrap_or_default().to_vec();
                    self.send(Update::History(history));
                    self.info(false).await;
                }
                Err(err) => self.error(err.to_string()),
            },
            Command::ListThreads => match self.session.threads() {
                Ok(threads) => self.send(Update::Threads(threads)),
                Err(err) => self.error(err.to_string()),
            },
            Command::SwitchModel(name) => match self.session.switch_model(&name).await {
                Ok(()) => self.info(false).await,
                Err(err) => self.error(err),
            },
            Command::ShowTools => match self.session.tools_view().await {
                Ok(view) => self.send(Update::Tools(view)),
                Err(err) => self.error(err.to_string()),
            },
            Command::ShowMcp => {
                let statuses = self.session.mcp().await.statuses().await;
                self.send(Update::Mcp(statuses));
            }
            Command::ReconnectMcp(name) => {
                let mcp = self.session.mcp().await;
                // All at once: the slowest server, not the sum, bounds the wait.
                let chosen = mcp
                    .servers()
                    .iter()
                    .filter(|s| name.as_deref().is_none_or(|n| n == s.config().name));
                futures::future::join_all(chosen.map(|s| s.reconnect())).await;
                self.send(Update::Mcp(mcp.statuses().await));
                self.info(false).await;
            }
        }
    }

    /// Runs `text` to completion. Commands arriving meanwhile: `Cancel` cancels, `Quit`
    /// cancels and ends the session (returns true), `Answer` and `ShowMcp` are answered,
    /// the rest wait.
    async fn submit(&mut self, text: String) -> bool {
        if let Err(err) = self.session.open_for(&text) {
            self.error(err.to_string());
            return false;
        }
        self.info(true).await;
        let updates = self.updates.clone();
        let emit = |event: Event| {
            let _ = updates.send(Update::Event(event));
        };
        let cancel = CancellationToken::new();
        let clarifications = self.session.clarifications();
        let mcp = self.session.mcp().await;
        let mut quit = false;
        let started = {
            let run = self.session.run(text, &emit, &cancel);
            tokio::pin!(run);
            loop {
                tokio::select! {
                    result = &mut run => break result,
                    command = self.commands.recv(), if !quit => match command {
                        Some(Command::Cancel) => cancel.cancel(),
                        Some(Command::Quit) | None => {
                            cancel.cancel();
                            quit = true;
                        }
                        Some(Command::Answer { call_id, answer }) => {
                            if let Some(clarifications) = &clarifications {
                                clarifications.answer(&call_id, answer);
                            }
                        }
                        Some(Command::ShowMcp) => {
                            // Not awaited here: a server restarting inside the run holds
                            // its lock until the run is polled again.
                            let (mcp, updates) = (mcp.clone(), updates.clone());
                            tokio::spawn(async move {
                                let _ = updates.send(Update::Mcp(mcp.statuses().await));
                            });
                        }
                        Some(other) => self.queued.push_back(other),
                    },
                }
            }
        };
        if let Err(err) = started {
            self.error(err.to_string());
        }
        self.info(false).await;
        quit
    }
}
