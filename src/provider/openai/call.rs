//! One model call: attempts, each a streamed request read to its end, and the retries
//! between them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_openai::Client;
use async_openai::types::chat::CreateChatCompletionRequest;
use futures::StreamExt;

use super::OpenAiProvider;
use super::accumulate::Accumulator;
use super::chunk::Chunk;
use super::failure::{AttemptError, backoff_delay, scrub};
use super::request::build_request;
use super::service::HttpService;
use crate::provider::{ModelEvent, ModelReply, ModelRequest, ProviderError};

impl OpenAiProvider {
    /// Runs the call, retrying what is worth retrying.
    pub(super) async fn run(
        &self,
        request: &ModelRequest,
        events: &(dyn Fn(ModelEvent) + Send + Sync),
    ) -> Result<ModelReply, ProviderError> {
        let body = build_request(&self.settings, request);
        let secret = self.settings.api_key.as_deref();
        let mut tries = 0;
        loop {
            tries += 1;
            tracing::debug!(endpoint = %self.endpoint, model = %self.settings.model, tries, "model call");
            let error = match self.attempt(&body, events).await {
                Ok(reply) => return Ok(reply),
                Err(error) => error,
            };
            let reason = scrub(&error.to_string(), secret);
            if tries > self.settings.max_retries || !error.is_retryable() {
                tracing::warn!(endpoint = %self.endpoint, tries, %reason, "model call failed");
                return Err(error.into_provider_error(&self.endpoint, tries, secret));
            }
            let delay = backoff_delay(
                tries,
                self.settings.backoff_base,
                self.settings.backoff_cap,
                error.retry_after(),
            );
            tracing::warn!(endpoint = %self.endpoint, tries, ?delay, %reason, "model call failed; retrying");
            events(ModelEvent::Retrying {
                attempt: tries + 1,
                delay,
                reason,
            });
            tokio::time::sleep(delay).await;
        }
    }

    /// One attempt: open the stream within the request timeout, then read chunks until
    /// the stream ends, each within the idle timeout.
    async fn attempt(
        &self,
        body: &CreateChatCompletionRequest,
        events: &(dyn Fn(ModelEvent) + Send + Sync),
    ) -> Result<ModelReply, AttemptError> {
        let done = Arc::new(AtomicBool::new(false));
        // A client per attempt, so that its `[DONE]` flag belongs to this stream alone;
        // building one only clones handles.
        let client = Client::build(self.http.clone(), self.config.clone())
            .with_http_service(HttpService::new(self.http.clone(), done.clone()));
        let chat = client.chat();
        let opened = chat.create_stream_byot::<_, Chunk>(body);
        let mut stream = tokio::time::timeout(self.settings.request_timeout, opened)
            .await
            .map_err(|_| AttemptError::RequestTimeout(self.settings.request_timeout))?
            .map_err(AttemptError::from_client)?;
        let idle = self.settings.stream_idle_timeout;
        let mut reply = Accumulator::default();
        while let Some(chunk) = tokio::time::timeout(idle, stream.next())
            .await
            .map_err(|_| AttemptError::IdleTimeout(idle))?
        {
            let chunk = chunk.map_err(AttemptError::from_client)?;
            reply.push(chunk, events).map_err(AttemptError::MidStream)?;
        }
        if !reply.finished() && !done.load(Ordering::SeqCst) {
            return Err(AttemptError::CutStream);
        }
        Ok(reply.finish(&self.ids))
    }
}
