//! Test models shared by the unit tests.

use std::sync::Mutex;

use super::{ModelEvent, ModelReply, ModelRequest, Provider, ReplyFuture};

/// A model that answers its first call with `first` (if any) and then never again: a run
/// using it waits until it is cancelled or dropped.
pub(crate) struct Silent(Mutex<Option<ModelReply>>);

impl Silent {
    /// Never answers.
    pub(crate) fn new() -> Self {
        Self(Mutex::new(None))
    }

    /// Answers once with `first`, then never.
    pub(crate) fn after(first: ModelReply) -> Self {
        Self(Mutex::new(Some(first)))
    }
}

impl Provider for Silent {
    fn complete<'a>(
        &'a self,
        _: &'a ModelRequest,
        _: &'a (dyn Fn(ModelEvent) + Send + Sync),
    ) -> ReplyFuture<'a> {
        let first = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        Box::pin(async move {
            match first {
                Some(reply) => Ok(reply),
                None => std::future::pending().await,
            }
        })
    }

    fn model(&self) -> &str {
        "silent"
    }

    fn endpoint(&self) -> &str {
        "silent"
    }
}
