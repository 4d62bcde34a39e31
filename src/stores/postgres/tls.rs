//! TLS for the Postgres connection, by rustls, as libpq's `sslmode` asks: `prefer` and
//! `require` encrypt without checking who answers (libpq does the same when it has no
//! root certificate); `verify-ca` checks the certificate chain; `verify-full` checks
//! the chain and the host name.

use std::path::Path;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::settings::TlsMode;

/// The connector for `mode`. The error is a sentence for the person who gave the URL.
pub(crate) fn connector(
    mode: TlsMode,
    root_cert: Option<&Path>,
) -> Result<MakeRustlsConnect, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS cannot be set up: {e}"))?;
    let config = match mode {
        // Never used to connect (tokio-postgres does not start TLS when disabled), but
        // the pool wants one connector type for every mode.
        TlsMode::Disable | TlsMode::Prefer | TlsMode::Require => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Unverified {
                algorithms: provider.signature_verification_algorithms,
            }))
            .with_no_client_auth(),
        TlsMode::VerifyCa | TlsMode::VerifyFull => {
            let roots = Arc::new(trusted_roots(root_cert)?);
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
                .build()
                .map_err(|e| format!("TLS cannot be set up: {e}"))?;
            let verifier: Arc<dyn ServerCertVerifier> = if mode == TlsMode::VerifyCa {
                Arc::new(AnyName { inner: webpki })
            } else {
                webpki
            };
            builder
                .dangerous()
                .with_custom_certificate_verifier(verifier)
                .with_no_client_auth()
        }
    };
    Ok(MakeRustlsConnect::new(config))
}

/// The roots a certificate must chain to: the `sslrootcert` file, else
/// `~/.postgresql/root.crt` as libpq looks for it, else the system's.
fn trusted_roots(root_cert: Option<&Path>) -> Result<RootCertStore, String> {
    let default_file = std::env::var_os("HOME")
        .map(|home| Path::new(&home).join(".postgresql/root.crt"))
        .filter(|path| path.is_file());
    let mut roots = RootCertStore::empty();
    match root_cert.map(Path::to_owned).or(default_file) {
        Some(path) if path.as_os_str() != "system" => {
            let certs = CertificateDer::pem_file_iter(&path)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| format!("sslrootcert {}: {e}", path.display()))?;
            let (added, _) = roots.add_parsable_certificates(certs);
            if added == 0 {
                return Err(format!(
                    "sslrootcert {} holds no certificate that can be used",
                    path.display()
                ));
            }
        }
        _ => {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
            if roots.is_empty() {
                return Err(
                    "sslmode asks to verify the server, but this machine has no trusted root certificates; give one with sslrootcert=FILE"
                        .to_owned(),
                );
            }
        }
    }
    Ok(roots)
}

/// Accepts any certificate, still checking that the server holds its key: libpq's
/// `require`, which encrypts but does not say who is at the other end.
#[derive(Debug)]
struct Unverified {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for Unverified {
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
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// `verify-ca`: the chain must be trusted; the name on the certificate is not checked.
#[derive(Debug)]
struct AnyName {
    inner: Arc<WebPkiServerVerifier>,
}

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.inner.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}
