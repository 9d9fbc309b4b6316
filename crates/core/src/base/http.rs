//! The shared HTTP client setup.

use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use rustls_platform_verifier::Verifier;

/// Installs `ring` as the process's TLS crypto provider, for clients that others build
/// (rmcp's OAuth requests); installing it twice is harmless.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Builds a `reqwest` client with the shared setup of [`http_client_builder`].
pub fn http_client() -> Result<reqwest::Client, reqwest::Error> {
    http_client_builder().build()
}

/// The shared client setup, for callers that add their own time cap or redirect policy.
/// reqwest is compiled without a built-in TLS crypto provider (the default one pulls a
/// large C build), so the `ring` provider is installed here first; installing it twice is
/// harmless.
///
/// The TLS setup is reqwest's own (the platform verifier, TLS 1.2 and 1.3, ALPN `h2` and
/// `http/1.1`), except that the system's root certificates are read at the first TLS
/// handshake of the process instead of whenever a client is built: reading and parsing
/// them costs milliseconds at every start, and a run that only talks to `http://`
/// endpoints (a local model, local MCP servers) never needs them. Being preconfigured,
/// the TLS setup ignores the builder's TLS options (`tls_version_min` and the like).
pub fn http_client_builder() -> reqwest::ClientBuilder {
    install_crypto_provider();
    let builder =
        reqwest::Client::builder().user_agent(concat!("antler/", env!("CARGO_PKG_VERSION")));
    match CryptoProvider::get_default().map(|provider| tls_config(provider.clone())) {
        Some(Ok(tls)) => builder.tls_backend_preconfigured(tls),
        // reqwest then sets TLS up itself and reports the same error from `build`.
        _ => builder,
    }
}

/// reqwest's default rustls configuration, verified by the process's [`LazyRoots`].
fn tls_config(provider: Arc<CryptoProvider>) -> Result<rustls::ClientConfig, rustls::Error> {
    static ROOTS: OnceLock<Arc<LazyRoots>> = OnceLock::new();
    let roots = ROOTS.get_or_init(|| Arc::new(LazyRoots::new(provider.clone())));
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(rustls::ALL_VERSIONS)?
        .dangerous()
        .with_custom_certificate_verifier(roots.clone())
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(tls)
}

/// The platform verifier reqwest would build, built when the first certificate is
/// checked. One per process: every client trusts the same roots, so they are read once.
#[derive(Debug)]
struct LazyRoots {
    /// Also checks the handshake signatures, which need no roots (the platform verifier
    /// delegates them to the provider's algorithms the same way).
    provider: Arc<CryptoProvider>,
    /// The loaded verifier, or why the system's roots could not be loaded (every
    /// handshake then fails with it, as building the client used to).
    verifier: OnceLock<Result<Verifier, rustls::Error>>,
}

impl LazyRoots {
    fn new(provider: Arc<CryptoProvider>) -> Self {
        Self {
            provider,
            verifier: OnceLock::new(),
        }
    }

    fn verifier(&self) -> Result<&Verifier, rustls::Error> {
        self.verifier
            .get_or_init(|| Verifier::new(self.provider.clone()))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Whether the roots have been loaded.
    #[cfg(test)]
    fn loaded(&self) -> bool {
        self.verifier.get().is_some()
    }
}

impl ServerCertVerifier for LazyRoots {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.verifier()?.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring() -> Arc<CryptoProvider> {
        Arc::new(rustls::crypto::ring::default_provider())
    }

    #[test]
    fn clients_build_with_the_preconfigured_tls() {
        // An unrecognised preconfigured backend (a rustls version reqwest does not use)
        // would make `build` fail.
        assert!(tls_config(ring()).is_ok());
        assert!(http_client().is_ok());
        assert!(http_client_builder().https_only(true).build().is_ok());
    }

    #[test]
    fn roots_are_loaded_by_the_first_certificate_check_only() {
        let roots = LazyRoots::new(ring());
        assert_eq!(
            roots.supported_verify_schemes(),
            ring().signature_verification_algorithms.supported_schemes()
        );
        assert!(!roots.loaded());
        let name = ServerName::try_from("example.com").unwrap();
        let garbage = CertificateDer::from(vec![0u8; 8]);
        let checked = roots.verify_server_cert(&garbage, &[], &name, &[], UnixTime::now());
        assert!(checked.is_err());
        assert!(roots.loaded());
    }
}
