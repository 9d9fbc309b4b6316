//! The middleware layers, one per file. Documented order (outermost first):
//!
//! 1. [`routing::Routing`] — promotes a server's top tools when the user's message names
//!    one of its routing keywords (so the filter below binds them in the same call).
//! 2. [`deferred_filter::DeferredFilter`] — binds non-deferred tools plus promoted ones,
//!    blocks calls to deferred tools that are not promoted, keeps the working set small.

pub mod deferred_filter;
pub mod routing;
