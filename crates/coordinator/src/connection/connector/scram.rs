//! The client side of SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka implements
//! it: GS2 header `n,,` (no channel binding, no authorization id), user names escaped but not
//! SASLprep'd, the password hashed as its UTF-8 bytes, and 4096..=16384 iterations.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};

/// The fewest iterations Kafka's client accepts (`ScramMechanism.minIterations`).
const MIN_ITERATIONS: u32 = 4096;
/// The most iterations Kafka's broker stores (`ScramMechanism.maxIterations`).
const MAX_ITERATIONS: u32 = 16384;

/// ClientProof and ServerSignature (RFC 5802 §3) with hash `$hash`: SaltedPassword is Hi(),
/// which is PBKDF2-HMAC with one block.
macro_rules! scram_keys {
    ($hash:ty, $password:expr, $salt:expr, $iterations:expr, $auth_message:expr) => {{
        let hmac = |key: &[u8], data: &[u8]| -> Vec<u8> {
            let mut mac =
                <Hmac<$hash> as Mac>::new_from_slice(key).expect("HMAC takes keys of any length");
            mac.update(data);
            mac.finalize().into_bytes().to_vec()
        };
        let mut salted = vec![0u8; <$hash as Digest>::output_size()];
        pbkdf2::pbkdf2_hmac::<$hash>($password, $salt, $iterations, &mut salted);
        let client_key = hmac(&salted, b"Client Key");
        let stored_key = <$hash as Digest>::digest(&client_key);
        let client_signature = hmac(&stored_key, $auth_message);
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&client_signature)
            .map(|(k, s)| k ^ s)
            .collect();
        let server_key = hmac(&salted, b"Server Key");
        (proof, hmac(&server_key, $auth_message))
    }};
}

/// Which hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScramHash {
    Sha256,
    Sha512,
}

/// One SCRAM exchange: client-first, then client-final from the server-first, then the check of
/// the server-final.
pub(crate) struct ScramClient {
    hash: ScramHash,
    password: Vec<u8>,
    nonce: String,
    client_first_bare: String,
    server_signature: Option<Vec<u8>>,
}

impl ScramClient {
    /// An exchange for `username` with a fresh random nonce.
    pub(crate) fn new(hash: ScramHash, username: &str, password: &str) -> Self {
        use rand::Rng;
        use rand::distr::Alphanumeric;
        let nonce: String = rand::rng()
            .sample_iter(Alphanumeric)
            .take(32)
            .map(char::from)
            .collect();
        Self::with_nonce(hash, username, password, nonce)
    }

    /// An exchange with a given nonce (test vectors).
    pub(crate) fn with_nonce(
        hash: ScramHash,
        username: &str,
        password: &str,
        nonce: String,
    ) -> Self {
        let name = username.replace('=', "=3D").replace(',', "=2C");
        Self {
            hash,
            password: password.as_bytes().to_vec(),
            client_first_bare: format!("n={name},r={nonce}"),
            nonce,
            server_signature: None,
        }
    }

    /// client-first-message: `n,,n=<user>,r=<nonce>`.
    pub(crate) fn client_first(&self) -> Vec<u8> {
        format!("n,,{}", self.client_first_bare).into_bytes()
    }

    /// client-final-message for `server_first` (`r=…,s=…,i=…`).
    pub(crate) fn client_final(&mut self, server_first: &[u8]) -> Result<Vec<u8>, String> {
        let text = std::str::from_utf8(server_first)
            .map_err(|_| "the server-first message is not UTF-8".to_owned())?;
        if let Some(e) = text.strip_prefix("e=") {
            return Err(format!("the broker refused the exchange: {e}"));
        }
        let (mut nonce, mut salt, mut iterations) = (None, None, None);
        for attribute in text.split(',') {
            match attribute.split_once('=') {
                Some(("r", v)) => nonce = Some(v),
                Some(("s", v)) => salt = Some(v),
                Some(("i", v)) => iterations = Some(v),
                Some(("m", _)) => {
                    return Err("the broker asks for an unknown mandatory extension".to_owned());
                }
                _ => {}
            }
        }
        let (Some(nonce), Some(salt), Some(iterations)) = (nonce, salt, iterations) else {
            return Err("the server-first message lacks r=, s= or i=".to_owned());
        };
        if !nonce.starts_with(&self.nonce) || nonce.len() <= self.nonce.len() {
            return Err("the broker's nonce does not extend the client's".to_owned());
        }
        let salt = BASE64
            .decode(salt)
            .map_err(|_| "the salt is not base64".to_owned())?;
        let iterations: u32 = iterations
            .parse()
            .map_err(|_| "the iteration count is not a number".to_owned())?;
        if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&iterations) {
            return Err(format!(
                "the broker asks for {iterations} iterations, outside Kafka's \
                 {MIN_ITERATIONS}..={MAX_ITERATIONS}"
            ));
        }
        // c=biws is base64("n,,"): the GS2 header without channel binding.
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{text},{without_proof}", self.client_first_bare);
        let (password, auth_message) = (&self.password, auth_message.as_bytes());
        let (proof, server_signature) = match self.hash {
            ScramHash::Sha256 => scram_keys!(Sha256, password, &salt, iterations, auth_message),
            ScramHash::Sha512 => scram_keys!(Sha512, password, &salt, iterations, auth_message),
        };
        self.server_signature = Some(server_signature);
        Ok(format!("{without_proof},p={}", BASE64.encode(proof)).into_bytes())
    }

    /// Checks server-final-message (`v=<ServerSignature>`): it proves the broker knows the
    /// password's keys too.
    pub(crate) fn verify_server_final(&self, server_final: &[u8]) -> Result<(), String> {
        let text = std::str::from_utf8(server_final)
            .map_err(|_| "the server-final message is not UTF-8".to_owned())?;
        if let Some(e) = text.strip_prefix("e=") {
            return Err(format!("the broker refused the credentials: {e}"));
        }
        let Some(signature) = text.split(',').find_map(|a| a.strip_prefix("v=")) else {
            return Err("the server-final message has no v=".to_owned());
        };
        let signature = BASE64
            .decode(signature)
            .map_err(|_| "the server signature is not base64".to_owned())?;
        match &self.server_signature {
            Some(expected) if constant_time_eq(expected, &signature) => Ok(()),
            Some(_) => Err(
                "the broker's signature is wrong: it does not hold this user's SCRAM \
                 credential (or someone is in the middle)"
                    .to_owned(),
            ),
            None => Err("server-final arrived before server-first".to_owned()),
        }
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
