//! A server's progress notifications, routed to the call that waits for them by its
//! progress token: the connection's handler offers each one, the call listens on its own
//! slot, which only ever holds the latest value.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use rmcp::model::{ProgressNotificationParam, ProgressToken};
use tokio::sync::watch;

/// A call's progress, as the user may be shown it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolProgress {
    /// How far it got (finite).
    pub progress: f64,
    /// Out of how much, when the server knows (finite).
    pub total: Option<f64>,
    /// What it is doing (escaped, one line, cut short).
    pub message: Option<String>,
}

/// The longest a progress message is shown, in characters.
const MESSAGE_CHARS: usize = 120;

/// The calls in flight that listen for progress, by token; shared by a connection's handler
/// and its calls.
#[derive(Clone, Default)]
pub(super) struct ProgressRoutes(
    Arc<Mutex<HashMap<ProgressToken, watch::Sender<Option<ToolProgress>>>>>,
);

impl ProgressRoutes {
    fn lock(&self) -> MutexGuard<'_, HashMap<ProgressToken, watch::Sender<Option<ToolProgress>>>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A slot for the call with `token`: updates arrive on the receiver until the
    /// [`Listener`] is dropped.
    pub(super) fn listen(
        &self,
        token: ProgressToken,
    ) -> (Listener<'_>, watch::Receiver<Option<ToolProgress>>) {
        let (slot, updates) = watch::channel(None);
        self.lock().insert(token.clone(), slot);
        (
            Listener {
                routes: self,
                token,
            },
            updates,
        )
    }

    /// Takes a server's notification into the slot of the call it names, if one waits for it.
    /// Only the latest value is kept (a flood costs one slot), and a value that goes back is
    /// dropped (notifications may be handled out of order).
    pub(super) fn offer(&self, update: ProgressNotificationParam) {
        let calls = self.lock();
        let Some(slot) = calls.get(&update.progress_token) else {
            tracing::debug!(token = ?update.progress_token, "progress for no call in flight is dropped");
            return;
        };
        let out_of_range =
            !update.progress.is_finite() || update.total.is_some_and(|total| !total.is_finite());
        if out_of_range {
            tracing::debug!(
                progress = update.progress,
                total = ?update.total,
                "progress with a number that is not finite: shown as 0 / without a total"
            );
        }
        let next = shown(update);
        slot.send_if_modified(|current| {
            if let Some(shown) = current.as_ref().filter(|c| c.progress > next.progress) {
                tracing::debug!(
                    progress = next.progress,
                    before = shown.progress,
                    "progress that goes back is dropped"
                );
                return false;
            }
            *current = Some(next);
            true
        });
    }
}

/// A notification as the user may be shown it: finite numbers, a short escaped message.
fn shown(update: ProgressNotificationParam) -> ToolProgress {
    let finite = |n: f64| n.is_finite().then_some(n);
    ToolProgress {
        progress: finite(update.progress).unwrap_or(0.0),
        total: update.total.and_then(finite),
        message: update
            .message
            .map(|message| crate::base::text::short_line(&message, MESSAGE_CHARS).0),
    }
}

/// A request's progress slot, given up when dropped (also when the request's future is).
pub(super) struct Listener<'a> {
    routes: &'a ProgressRoutes,
    token: ProgressToken,
}

impl Drop for Listener<'_> {
    fn drop(&mut self) {
        self.routes.lock().remove(&self.token);
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::NumberOrString;

    use super::*;

    fn update(token: i64, progress: f64, message: &str) -> ProgressNotificationParam {
        ProgressNotificationParam::new(ProgressToken(NumberOrString::Number(token)), progress)
            .with_message(message)
    }

    #[test]
    fn a_calls_slot_keeps_the_latest_progress_that_moves_forward() {
        let calls = ProgressRoutes::default();
        let (_listener, seen) = calls.listen(ProgressToken(NumberOrString::Number(1)));
        calls.offer(update(1, 2.0, "two"));
        calls.offer(update(1, 1.0, "one, late"));
        calls.offer(update(9, 5.0, "not a call of ours"));
        let latest = seen.borrow().clone().unwrap();
        assert_eq!(
            (latest.progress, latest.message.as_deref()),
            (2.0, Some("two"))
        );
        let flood = format!("{}\u{1b}[2J", "a ".repeat(1_000_000));
        calls.offer(update(1, f64::INFINITY, &flood));
        let latest = seen.borrow().clone().unwrap();
        assert_eq!(
            latest.progress, 2.0,
            "not finite: kept back as 0, which goes back"
        );
        calls.offer(update(1, 3.0, &flood));
        let message = seen.borrow().clone().unwrap().message.unwrap();
        assert!(message.chars().count() <= MESSAGE_CHARS && !message.contains('\u{1b}'));
    }

    #[test]
    fn a_dropped_listener_gives_its_slot_up() {
        let calls = ProgressRoutes::default();
        let token = ProgressToken(NumberOrString::Number(1));
        let (listener, _seen) = calls.listen(token.clone());
        assert!(calls.lock().contains_key(&token));
        drop(listener);
        assert!(calls.lock().is_empty());
    }
}
