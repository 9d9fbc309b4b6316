//! One model call: attempts, each a streamed request read to its end, and the retries
//! between them.

use std::sync::atomic::Ordering;
use std::time::Duration;

use async_openai::Client;
use async_openai::types::chat::CreateChatCompletionRequest;
use futures::{Stream, StreamExt};

use super::OpenAiProvider;
use super::accumulate::Accumulator;
use super::chunk::Chunk;
use super::failure::{AttemptError, backoff_delay, scrub};
use super::request::build_request;
use super::service::{BodyWatch, HttpService};
use crate::config::ToolCallFormat;
use crate::provider::text_calls::HoldBack;
use crate::provider::{ModelEvent, ModelReply, ModelRequest, ProviderError};

impl OpenAiProvider {
    /// Runs the call, retrying what is worth retrying.
    pub(super) async fn run(
        &self,
        request: &ModelRequest,
        events: &(dyn Fn(ModelEvent) + Send + Sync),
    ) -> Result<ModelReply, ProviderError> {
        let body = build_request(&self.settings, request);
        let texts = self.settings.tool_call_format != ToolCallFormat::Native;
        let held = HoldBack::new(events);
        let forward = |event: ModelEvent| held.event(event);
        let events: &(dyn Fn(ModelEvent) + Send + Sync) = if texts { &forward } else { events };
        let calls = self.attempts(&body, request, events, texts, &held);
        let bound = self.settings.call_timeout;
        tokio::time::timeout(bound, calls)
            .await
            .unwrap_or_else(|_| {
                tracing::info!(endpoint = %self.endpoint, ?bound, "model call timed out");
                Err(ProviderError::Transport {
                    endpoint: self.endpoint.clone(),
                    message: format!(
                        "the model call took longer than {bound:?} in all, retries included \
                     (call timeout: the model's call_timeout_seconds)"
                    ),
                })
            })
    }

    /// The attempts of one call, until one succeeds or the last has failed.
    async fn attempts(
        &self,
        body: &CreateChatCompletionRequest,
        request: &ModelRequest,
        events: &(dyn Fn(ModelEvent) + Send + Sync),
        texts: bool,
        held: &HoldBack<'_>,
    ) -> Result<ModelReply, ProviderError> {
        let secret = self.settings.api_key.as_deref();
        let mut tries = 0;
        loop {
            tries += 1;
            tracing::debug!(endpoint = %self.endpoint, model = %self.settings.model, tries, "model call");
            let error = match self.attempt(body, events).await {
                Ok(mut reply) => {
                    if texts {
                        self.adopt_text_call(&mut reply, request);
                        held.finish(reply.from_text);
                    }
                    return Ok(reply);
                }
                Err(error) => error,
            };
            let reason = scrub(&error.to_string(), secret);
            if tries > self.settings.max_retries || !error.is_retryable() {
                tracing::info!(endpoint = %self.endpoint, tries, %reason, "model call failed");
                return Err(error.into_provider_error(&self.endpoint, tries, secret));
            }
            let delay = backoff_delay(
                tries,
                self.settings.backoff_base,
                self.settings.backoff_cap,
                error.retry_after(),
            );
            tracing::info!(endpoint = %self.endpoint, tries, ?delay, %reason, "model call failed; retrying");
            events(ModelEvent::Retrying {
                attempt: tries + 1,
                delay,
                reason,
            });
            tokio::time::sleep(delay).await;
        }
    }

    /// One attempt: open the stream within the request timeout, then read chunks until
    /// the stream ends, with no silence longer than the idle timeout: any bytes count, SSE
    /// comments too. An abandoned attempt drops its stream, which closes the connection, so
    /// the server can stop working on it before the retry.
    async fn attempt(
        &self,
        body: &CreateChatCompletionRequest,
        events: &(dyn Fn(ModelEvent) + Send + Sync),
    ) -> Result<ModelReply, AttemptError> {
        let watch = BodyWatch::new();
        // A client per attempt, so that its body watch belongs to this stream alone;
        // building one only clones handles.
        let client = Client::build(self.http.clone(), self.config.clone())
            .with_http_service(HttpService::new(self.http.clone(), watch.clone()));
        let chat = client.chat();
        let opened = chat.create_stream_byot::<_, Chunk>(body);
        let mut stream = tokio::time::timeout(self.settings.request_timeout, opened)
            .await
            .map_err(|_| AttemptError::RequestTimeout(self.settings.request_timeout))?
            .map_err(AttemptError::from_client)?;
        let idle = self.settings.stream_idle_timeout;
        let mut pieces = watch.pieces.subscribe();
        let mut reply = Accumulator::default();
        // Keep-alive comments keep a stream alive, but only so long before its first chunk:
        // a proxy that sends nothing else would otherwise hold the call forever.
        let first = self.settings.first_chunk_timeout;
        // A bound too far to count (`u64::MAX` seconds) is no bound.
        let mut deadline = tokio::time::Instant::now().checked_add(first);
        while let Some(chunk) = next_unless_silent(&mut stream, &mut pieces, idle, deadline)
            .await
            .map_err(|e| e.unwrap_or(AttemptError::FirstChunkTimeout(first)))?
        {
            deadline = None;
            let chunk = chunk.map_err(AttemptError::from_client)?;
            reply.push(chunk, events).map_err(AttemptError::MidStream)?;
        }
        if !reply.finished() && !watch.done.load(Ordering::SeqCst) {
            return Err(AttemptError::CutStream);
        }
        Ok(reply.finish(&self.ids))
    }
}

impl OpenAiProvider {
    /// Makes an answer that is only tool calls written as text into those calls.
    fn adopt_text_call(&self, reply: &mut ModelReply, request: &ModelRequest) {
        crate::provider::text_calls::adopt(reply, request, &self.ids);
    }
}

/// The stream's next item, waiting as long as the body keeps sending something (`pieces`
/// changes with every piece of it) and failing after `idle` of silence, or at `deadline`
/// whatever arrives (`Err(None)`: the first chunk's deadline passed).
async fn next_unless_silent<S: Stream + Unpin>(
    stream: &mut S,
    pieces: &mut tokio::sync::watch::Receiver<u64>,
    idle: Duration,
    deadline: Option<tokio::time::Instant>,
) -> Result<Option<S::Item>, Option<AttemptError>> {
    let passed = async {
        match deadline {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(passed);
    loop {
        tokio::select! {
            biased;
            item = stream.next() => return Ok(item),
            () = &mut passed => return Err(None),
            heard = tokio::time::timeout(idle, pieces.changed()) => match heard {
                // Bytes that made no item yet (a comment, part of a line): still alive.
                Ok(Ok(())) => continue,
                // The body is gone; the stream ends (or errs) with its next item.
                Ok(Err(_)) => {
                    return tokio::time::timeout(idle, stream.next())
                        .await
                        .map_err(|_| Some(AttemptError::IdleTimeout(idle)));
                }
                Err(_) => return Err(Some(AttemptError::IdleTimeout(idle))),
            },
        }
    }
}
