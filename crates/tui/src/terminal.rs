//! The real terminal: raw mode, the alternate screen, bracketed paste, mouse capture and
//! (where the terminal has it) the keyboard protocol that tells Shift-Enter from Enter;
//! the loop over key events, the core's updates and a tick; and restoring the terminal on
//! every way out, a panic included.

use std::io::{self, Stdout, Write};
use std::panic::PanicHookInfo;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crossterm::event::{
    DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    Event as TermEvent, EventStream, KeyboardEnhancementFlags, PopKeyboardEnhancementFlags,
    PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{self, EnterAlternateScreen, LeaveAlternateScreen};
use crossterm::{cursor, execute};
use futures::StreamExt;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use super::TuiError;
use super::app::App;
use super::theme::Theme;
use antler_protocol::ChatEnding;
use antler_protocol::{Command, SessionInfo, Update};

/// How often spinners move.
const TICK: Duration = Duration::from_millis(100);

/// Updates handled before the screen is drawn again (a fast stream draws once per batch).
const UPDATE_BATCH: usize = 512;

/// Whether the terminal is in the chat's modes (so the panic hook knows to restore it).
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Whether the keyboard protocol was pushed (and must be popped).
static ENHANCED: AtomicBool = AtomicBool::new(false);

type Hook = Arc<dyn Fn(&PanicHookInfo<'_>) + Sync + Send + 'static>;

/// Runs the interactive chat until the user quits (`Command::Quit` is sent) or the
/// updates channel closes. It owns the screen meanwhile and always gives it back. The
/// screen comes up at once with `info`, what is known before the session is ready; the
/// session says when it is with [`Update::Ready`].
pub async fn run_tui(
    commands: UnboundedSender<Command>,
    mut updates: UnboundedReceiver<Update>,
    info: SessionInfo,
    pick_thread: bool,
) -> Result<ChatEnding, TuiError> {
    let mut app = App::starting(info, Theme::from_env());
    if pick_thread {
        for command in app.pick_thread() {
            let _ = commands.send(command);
        }
    }
    let previous: Hook = Arc::from(std::panic::take_hook());
    let chained = previous.clone();
    // While the chat owns the screen a panic message would vanish with the alternate
    // screen, and a panic that is caught (a tool's, turned into an error result) must not
    // end the chat: the message is kept and printed only if the panic unwinds out of the
    // chat, after the terminal is restored (see `Screen`'s drop).
    std::panic::set_hook(Box::new(move |panic| {
        if ACTIVE.load(Ordering::SeqCst) {
            *PANIC.lock().unwrap_or_else(PoisonError::into_inner) = Some(panic.to_string());
        } else {
            chained(panic);
        }
    }));
    let result = match enter() {
        Ok(mut terminal) => {
            let _screen = Screen;
            run(&mut terminal, &mut app, &commands, &mut updates).await
        }
        Err(err) => Err(err),
    };
    restore();
    let _ours = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |panic| previous(panic)));
    result.map(|()| match app.interrupted {
        true => ChatEnding::Interrupted,
        false => ChatEnding::Quit,
    })
}

/// The message of the last panic seen while the chat owned the screen.
static PANIC: Mutex<Option<String>> = Mutex::new(None);

/// Restores the terminal when dropped, also while a panic unwinds out of the chat; then
/// prints that panic's message, which the hook held back.
struct Screen;

impl Drop for Screen {
    fn drop(&mut self) {
        restore();
        if std::thread::panicking()
            && let Some(message) = PANIC.lock().unwrap_or_else(PoisonError::into_inner).take()
        {
            eprintln!("{message}");
        }
    }
}

/// Puts the terminal into the chat's modes.
fn enter() -> Result<Terminal<CrosstermBackend<Stdout>>, TuiError> {
    terminal::enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    let mut out = io::stdout();
    execute!(
        out,
        EnterAlternateScreen,
        EnableBracketedPaste,
        EnableMouseCapture
    )?;
    if matches!(terminal::supports_keyboard_enhancement(), Ok(true)) {
        execute!(
            out,
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        )?;
        ENHANCED.store(true, Ordering::SeqCst);
    }
    let mut terminal = Terminal::new(CrosstermBackend::new(out))?;
    terminal.clear()?;
    Ok(terminal)
}

/// Gives the terminal back as it was: idempotent, and safe from the panic hook.
fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = io::stdout();
    if ENHANCED.swap(false, Ordering::SeqCst) {
        let _ = execute!(out, PopKeyboardEnhancementFlags);
    }
    let steps = execute!(
        out,
        DisableMouseCapture,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        cursor::Show
    );
    let raw = terminal::disable_raw_mode();
    let _ = out.flush();
    if let Err(err) = steps.and(raw) {
        tracing::warn!(%err, "could not fully restore the terminal");
    }
}

/// The loop: the user's events, the core's updates and the tick, drawing after each.
async fn run(
    terminal: &mut Terminal<CrosstermBackend<Stdout>>,
    app: &mut App,
    commands: &UnboundedSender<Command>,
    updates: &mut UnboundedReceiver<Update>,
) -> Result<(), TuiError> {
    let mut events = EventStream::new();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    terminal.draw(|f| app.render(f))?;
    loop {
        let (sent, dirty) = tokio::select! {
            event = events.next() => match event {
                Some(Ok(event)) => handle(app, event),
                Some(Err(err)) => return Err(err.into()),
                None => return Ok(()),
            },
            update = updates.recv() => match update {
                Some(update) => {
                    let mut sent = app.update(update);
                    for _ in 0..UPDATE_BATCH {
                        match updates.try_recv() {
                            Ok(update) => sent.extend(app.update(update)),
                            Err(_) => break,
                        }
                    }
                    (sent, true)
                }
                None => return Ok(()),
            },
            _ = tick.tick() => (Vec::new(), app.tick()),
        };
        for command in sent {
            let quit = command == Command::Quit;
            if commands.send(command).is_err() {
                tracing::info!("the session is gone; leaving the chat");
                return Ok(());
            }
            if quit {
                return Ok(());
            }
        }
        if dirty {
            terminal.draw(|f| app.render(f))?;
        }
    }
}

/// One terminal event: the commands it asks for, and whether the screen changed.
fn handle(app: &mut App, event: TermEvent) -> (Vec<Command>, bool) {
    match event {
        TermEvent::Key(key) => (app.key(key), true),
        TermEvent::Paste(text) => {
            app.paste(&text);
            (Vec::new(), true)
        }
        TermEvent::Mouse(mouse) => (Vec::new(), app.mouse(mouse)),
        TermEvent::Resize(..) => (Vec::new(), true),
        TermEvent::FocusGained | TermEvent::FocusLost => (Vec::new(), false),
    }
}
