//! Requests that wait for a front-end's answer, by id: an elicitation, an approval. The
//! core announces a request as an event and waits here; the front-end's command answers
//! it by the same id. A request whose asker goes away (its call ended) is withdrawn.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::oneshot;

/// The requests waiting for an answer of type `A`.
pub struct Pending<A> {
    waiting: Arc<Mutex<HashMap<u64, oneshot::Sender<A>>>>,
}

impl<A> Clone for Pending<A> {
    fn clone(&self) -> Self {
        Self {
            waiting: self.waiting.clone(),
        }
    }
}

impl<A> Default for Pending<A> {
    fn default() -> Self {
        Self {
            waiting: Arc::default(),
        }
    }
}

impl<A> std::fmt::Debug for Pending<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending").finish_non_exhaustive()
    }
}

/// A registered request's answer to come; dropping it withdraws the request.
pub struct Waiter<'a, A> {
    answer: oneshot::Receiver<A>,
    _withdraw: Withdraw<'a, A>,
}

impl<A> Waiter<'_, A> {
    /// The answer; `None` when the front-end dropped the request.
    pub async fn answer(self) -> Option<A> {
        let Waiter { answer, _withdraw } = self;
        answer.await.ok()
    }
}

struct Withdraw<'a, A> {
    pending: &'a Pending<A>,
    id: u64,
}

impl<A> Drop for Withdraw<'_, A> {
    fn drop(&mut self) {
        self.pending.waiting().remove(&self.id);
    }
}

impl<A> Pending<A> {
    fn waiting(&self) -> MutexGuard<'_, HashMap<u64, oneshot::Sender<A>>> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers the request `id` before it is announced, so that no answer can come
    /// first.
    pub fn register(&self, id: u64) -> Waiter<'_, A> {
        let (sender, answer) = oneshot::channel();
        self.waiting().insert(id, sender);
        Waiter {
            answer,
            _withdraw: Withdraw { pending: self, id },
        }
    }

    /// Answers the request `id`; `false` when nobody waits for it any more.
    pub fn answer(&self, id: u64, answer: A) -> bool {
        match self.waiting().remove(&id) {
            Some(waiting) => waiting.send(answer).is_ok(),
            None => false,
        }
    }
}

/// A new request id, unique in the process (ids from a model or a server are not).
pub(crate) fn next_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn answers_reach_their_waiter_once_and_withdrawn_requests_take_none() {
        let pending: Pending<&str> = Pending::default();
        let (a, b) = (next_id(), next_id());
        assert_ne!(a, b);
        let waiter = pending.register(a);
        assert!(!pending.answer(b, "nobody"), "not registered");
        assert!(pending.answer(a, "yes"));
        assert!(!pending.answer(a, "again"), "answered once");
        assert_eq!(waiter.answer().await, Some("yes"));
        drop(pending.register(b));
        assert!(!pending.answer(b, "late"), "withdrawn with its waiter");
    }
}
