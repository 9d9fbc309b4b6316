//! The client assertion of `private_key_jwt` (RFC 7523 §2.2): a short-lived JWT that says
//! "this client" (`iss` = `sub` = the client id) to one authorization server (`aud`, its
//! issuer), signed with the client's key. Signed with `ring`, which antler already carries
//! for TLS: rmcp's own `private_key_jwt` needs `jsonwebtoken` on aws-lc-rs, a large C
//! build, for what is a dozen lines here.

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::{SecureRandom as _, SystemRandom};
use ring::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, RSA_PKCS1_SHA256, RsaKeyPair,
};
use serde_json::json;

use crate::config::SigningAlgorithm;

/// How long an assertion is valid: long enough for one token request.
const LIFETIME_SECS: u64 = 300;

/// A key that signs assertions, read from a PEM file.
pub(super) struct Signer {
    key: Key,
    rng: SystemRandom,
}

enum Key {
    Ec(EcdsaKeyPair),
    Rsa(RsaKeyPair),
}

/// Why a key cannot sign.
#[derive(Debug, thiserror::Error)]
pub(super) enum KeyError {
    /// Not a PEM `PRIVATE KEY` block.
    #[error(
        "expected a PEM block `-----BEGIN PRIVATE KEY-----` (PKCS#8; convert other keys with \
         `openssl pkcs8 -topk8 -nocrypt`)"
    )]
    NotPkcs8,
    /// The block is not a key of the algorithm.
    #[error("it is not a {0} private key in PKCS#8")]
    Rejected(&'static str),
    /// Signing failed.
    #[error("signing failed")]
    Sign,
}

impl Signer {
    /// The key in `pem`, for `algorithm`.
    pub(super) fn from_pem(pem: &str, algorithm: SigningAlgorithm) -> Result<Self, KeyError> {
        let der = pkcs8_der(pem).ok_or(KeyError::NotPkcs8)?;
        let rng = SystemRandom::new();
        let key = match algorithm {
            SigningAlgorithm::Es256 => Key::Ec(
                EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der, &rng)
                    .map_err(|_| KeyError::Rejected("P-256 (ES256)"))?,
            ),
            SigningAlgorithm::Rs256 => Key::Rsa(
                RsaKeyPair::from_pkcs8(&der).map_err(|_| KeyError::Rejected("RSA (RS256)"))?,
            ),
        };
        Ok(Self { key, rng })
    }

    fn algorithm(&self) -> SigningAlgorithm {
        match self.key {
            Key::Ec(_) => SigningAlgorithm::Es256,
            Key::Rsa(_) => SigningAlgorithm::Rs256,
        }
    }

    /// An assertion that `client_id` is calling `audience`, issued at `now` (unix seconds).
    pub(super) fn assertion(
        &self,
        client_id: &str,
        audience: &str,
        now: u64,
    ) -> Result<String, KeyError> {
        let mut jti = [0u8; 16];
        self.rng.fill(&mut jti).map_err(|_| KeyError::Sign)?;
        let header = json!({"alg": self.algorithm().as_str(), "typ": "JWT"});
        let claims = json!({
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "iat": now,
            "exp": now + LIFETIME_SECS,
            "jti": URL_SAFE_NO_PAD.encode(jti),
        });
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = match &self.key {
            Key::Ec(pair) => pair
                .sign(&self.rng, input.as_bytes())
                .map_err(|_| KeyError::Sign)?
                .as_ref()
                .to_vec(),
            Key::Rsa(pair) => {
                let mut out = vec![0; pair.public().modulus_len()];
                pair.sign(&RSA_PKCS1_SHA256, &self.rng, input.as_bytes(), &mut out)
                    .map_err(|_| KeyError::Sign)?;
                out
            }
        };
        Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature)))
    }
}

/// The DER of the first `PRIVATE KEY` block of `pem`.
fn pkcs8_der(pem: &str) -> Option<Vec<u8>> {
    let start = pem.find("-----BEGIN PRIVATE KEY-----")?;
    let body = &pem[start + "-----BEGIN PRIVATE KEY-----".len()..];
    let end = body.find("-----END PRIVATE KEY-----")?;
    let text: String = body[..end].split_whitespace().collect();
    STANDARD.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use ring::signature::{ECDSA_P256_SHA256_FIXED, KeyPair as _, UnparsedPublicKey};

    use super::*;

    fn pem_of(der: &[u8]) -> String {
        format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            STANDARD.encode(der)
        )
    }

    #[test]
    fn an_es256_assertion_verifies_with_the_public_key_and_names_the_client() {
        let rng = SystemRandom::new();
        let der = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der.as_ref(), &rng).unwrap();
        let signer = Signer::from_pem(&pem_of(der.as_ref()), SigningAlgorithm::Es256).unwrap();
        let jwt = signer
            .assertion("ci-client", "https://as.example", 1_000)
            .unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(claims["iss"], "ci-client");
        assert_eq!(claims["sub"], "ci-client");
        assert_eq!(claims["aud"], "https://as.example");
        assert_eq!(claims["exp"], 1_300);
        let header: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
        assert_eq!(header["alg"], "ES256");
        let signature = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, pair.public_key().as_ref())
            .verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature)
            .expect("the signature verifies");
        let again = signer
            .assertion("ci-client", "https://as.example", 1_000)
            .unwrap();
        assert_ne!(jwt, again, "each assertion has its own jti");
    }

    #[test]
    fn keys_that_are_not_pkcs8_of_the_algorithm_are_refused() {
        assert!(matches!(
            Signer::from_pem(
                "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----",
                SigningAlgorithm::Es256
            ),
            Err(KeyError::NotPkcs8)
        ));
        let rng = SystemRandom::new();
        let der = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        assert!(matches!(
            Signer::from_pem(&pem_of(der.as_ref()), SigningAlgorithm::Rs256),
            Err(KeyError::Rejected(_))
        ));
        assert!(matches!(
            Signer::from_pem(&pem_of(b"garbage"), SigningAlgorithm::Es256),
            Err(KeyError::Rejected(_))
        ));
    }
}
