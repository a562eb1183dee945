//! TLS for the clients: rustls with the ring provider; trust from the system's store, a CA file,
//! or (explicitly, for self-signed lab servers) nothing at all.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

/// Which server certificates a client accepts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Trust {
    /// The operating system's trust store (rustls-native-certs).
    #[default]
    System,
    /// The certificates (PEM) in this file, and only those.
    CaFile(PathBuf),
    /// Any certificate, unchecked: for a lab server with a self-signed certificate, never by
    /// default (the connection is encrypted but not authenticated).
    Insecure,
}

/// The largest `--ca-file` read: 4 MiB (the system's whole bundle of some 150 roots is about
/// 220 KB).
pub const CA_FILE_LIMIT: u64 = 4 * 1024 * 1024;

/// A TLS setup failure (a CA file that cannot be read, a store with no certificate).
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    /// The CA file could not be read or held no certificate.
    #[error("CA file {path}: {why}")]
    CaFile {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        why: String,
    },
    /// The system's trust store gave no certificate.
    #[error("the system's trust store has no certificate ({0}); give --ca-file")]
    NoSystemRoots(String),
}

/// A client TLS configuration shared by every connection of a run (one per run, not per
/// connection: its session cache and roots are shared).
pub fn client_config(trust: &Trust) -> Result<Arc<ClientConfig>, TlsSetupError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsSetupError::NoSystemRoots(e.to_string()))?;
    let config = match trust {
        Trust::Insecure => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAny(provider)))
            .with_no_client_auth(),
        Trust::CaFile(path) => {
            let mut roots = RootCertStore::empty();
            // The one bounded reader: a regular file of at most CA_FILE_LIMIT (a FIFO, device
            // or /dev/zero refused before it is opened, never blocking).
            let pem = mbx_config::input::read_bounded_bytes(
                path,
                CA_FILE_LIMIT,
                "a --ca-file (PEM certificates)",
            )
            .map_err(|e| TlsSetupError::CaFile {
                path: path.clone(),
                why: e.to_string(),
            })?;
            let certs = CertificateDer::pem_slice_iter(&pem);
            for cert in certs {
                let cert = cert.map_err(|e| TlsSetupError::CaFile {
                    path: path.clone(),
                    why: e.to_string(),
                })?;
                roots.add(cert).map_err(|e| TlsSetupError::CaFile {
                    path: path.clone(),
                    why: e.to_string(),
                })?;
            }
            if roots.is_empty() {
                return Err(TlsSetupError::CaFile {
                    path: path.clone(),
                    why: "no PEM certificate in it".into(),
                });
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
        Trust::System => {
            let found = rustls_native_certs::load_native_certs();
            let mut roots = RootCertStore::empty();
            let (added, _ignored) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                let why = found
                    .errors
                    .first()
                    .map(|e| e.to_string())
                    .unwrap_or_else(|| "none found".into());
                return Err(TlsSetupError::NoSystemRoots(why));
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
    };
    Ok(Arc::new(config))
}

/// The verifier of `Trust::Insecure`: accepts any certificate, but still checks that the
/// handshake's signatures are valid for the certificate presented.
#[derive(Debug)]
struct AcceptAny(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
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
            &self.0.signature_verification_algorithms,
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
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
