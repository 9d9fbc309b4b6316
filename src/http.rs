//! The shared HTTP client setup.

/// Builds a `reqwest` client with the shared setup of [`http_client_builder`].
pub fn http_client() -> Result<reqwest::Client, reqwest::Error> {
    http_client_builder().build()
}

/// The shared client setup, for callers that add their own time cap or redirect policy.
/// reqwest is compiled without a built-in TLS crypto provider (the default one pulls a
/// large C build), so the `ring` provider is installed here first; installing it twice is
/// harmless.
pub fn http_client_builder() -> reqwest::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().user_agent(concat!("antler/", env!("CARGO_PKG_VERSION")))
}
