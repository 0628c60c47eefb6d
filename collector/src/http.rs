//! The collector's HTTP client, one for every receiver it pushes to (VictoriaMetrics, Prometheus
//! remote write, the alert receivers): which URLs it takes (`http://` and `https://`), the ureq
//! agent it sends with, and the trust of its https: rustls checking the receiver's certificate
//! against Mozilla's root certificates built into the binary (the same on Linux, macOS and
//! Windows), or against the certificates of `--ca-file` instead (a private CA; or the system's
//! bundle, e.g. /etc/ssl/certs/ca-certificates.crt). The agent on the NAS has no TLS stack.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig, TlsProvider};

/// Who the collector's https trusts: Mozilla's roots, or the certificates of one PEM file.
#[derive(Debug, Clone, Default)]
pub struct Trust {
    /// `--ca-file`: its path and its certificates. None: Mozilla's roots.
    ca: Option<(PathBuf, Arc<Vec<Certificate<'static>>>)>,
}

/// What goes wrong with `--ca-file`.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("--ca-file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("--ca-file {}: not PEM: {msg}", path.display())]
    Pem { path: PathBuf, msg: String },
    #[error(
        "--ca-file {}: no certificate in it (want PEM blocks '-----BEGIN CERTIFICATE-----')",
        path.display()
    )]
    NoCertificate { path: PathBuf },
}

impl Trust {
    /// Trusts the certificates of the PEM file at `path` (and no others); private keys in the
    /// file are skipped.
    pub fn from_ca_file(path: &Path) -> Result<Trust, TrustError> {
        let pem = std::fs::read(path).map_err(|source| TrustError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Trust::from_pem(path, &pem)
    }

    /// [`Trust::from_ca_file`] of bytes already read (`path` names them in errors).
    pub(crate) fn from_pem(path: &Path, pem: &[u8]) -> Result<Trust, TrustError> {
        let mut certs = Vec::new();
        for item in ureq::tls::parse_pem(pem) {
            match item {
                Ok(PemItem::Certificate(c)) => certs.push(c),
                Ok(_) => {}
                Err(e) => {
                    return Err(TrustError::Pem {
                        path: path.to_path_buf(),
                        msg: e.to_string(),
                    });
                }
            }
        }
        if certs.is_empty() {
            return Err(TrustError::NoCertificate {
                path: path.to_path_buf(),
            });
        }
        Ok(Trust {
            ca: Some((path.to_path_buf(), Arc::new(certs))),
        })
    }

    /// An agent whose every request (connect, TLS, send, answer) ends within `timeout`, whose
    /// HTTP error statuses are answers, not errors, and which follows no redirect: a POST
    /// redirected by 301/302 would come back as a GET without its batch, whose 405 would read as
    /// the batch refused for good ([`redirect_words`] says where to point instead).
    pub(crate) fn agent(&self, timeout: Duration) -> ureq::Agent {
        let roots = match &self.ca {
            Some((_, certs)) => RootCerts::Specific(certs.clone()),
            None => RootCerts::WebPki,
        };
        ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            .tls_config(
                TlsConfig::builder()
                    .provider(TlsProvider::Rustls)
                    .root_certs(roots)
                    .build(),
            )
            .build()
            .into()
    }

    /// What the receiver's certificate is checked against, for error messages.
    fn roots_words(&self) -> String {
        match &self.ca {
            Some((p, _)) => format!("the certificates of --ca-file {}", p.display()),
            None => "the built-in Mozilla roots (a private CA: --ca-file FILE)".to_string(),
        }
    }

    /// One line for a failed request to `url`: the client's error, and when the receiver's
    /// certificate was refused, what it was checked against.
    pub(crate) fn describe(&self, url: &str, e: &ureq::Error) -> String {
        match is_certificate_error(e) {
            true => format!(
                "{url}: {e}: the receiver's certificate is not accepted by {}",
                self.roots_words()
            ),
            false => format!("{url}: {e}"),
        }
    }
}

/// True when the receiver's certificate was refused (not for a failed connection or protocol):
/// rustls' error as ureq's own, or inside the I/O error of the handshake.
pub(crate) fn is_certificate_error(e: &ureq::Error) -> bool {
    let tls = match e {
        ureq::Error::Rustls(r) => Some(r),
        ureq::Error::Io(io) => io.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()),
        _ => None,
    };
    matches!(
        tls,
        Some(rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented)
    )
}

/// Of a receiver's answer (an error body, a Location), this many characters are shown.
pub(crate) const ANSWER_CHARS: usize = 300;

/// A receiver's words (an error body, a header) made safe to print and store: trimmed, cut to
/// `max` characters, every control, bidi and format character replaced by its visible stand-in
/// (the one sanitizer, `proto::sanitize`): a receiver is as untrusted as an agent.
pub(crate) fn answer_text(s: &str, max: usize) -> String {
    let cut: String = s.trim().chars().take(max).collect();
    nasprobe_proto::sanitize::text(&cut)
}

/// For a 3xx answer: where the receiver sends the client, and what to do about it.
pub(crate) fn redirect_words<B>(resp: &ureq::http::Response<B>) -> Option<String> {
    if !resp.status().is_redirection() {
        return None;
    }
    let to = resp
        .headers()
        .get("location")
        .and_then(|l| l.to_str().ok())
        .unwrap_or("nowhere (no Location)");
    let to = answer_text(to, ANSWER_CHARS);
    Some(format!(
        "redirects to {to}: give that URL instead (a push does not follow redirects)"
    ))
}

/// Checks a receiver's URL and adds `http://` when no scheme is given: `https://` and
/// `http://` are taken, anything else with `://` is refused. `flag` names the URL in errors.
pub(crate) fn url_with_scheme(flag: &str, url: &str) -> Result<String, String> {
    let u = url.trim();
    if u.starts_with("http://") || u.starts_with("https://") {
        return Ok(u.to_string());
    }
    if let Some((scheme, _)) = u.split_once("://") {
        return Err(format!(
            "{flag} {url:?}: scheme {scheme:?} is not http or https"
        ));
    }
    Ok(format!("http://{u}"))
}

/// Query parameters whose value is a secret when a name holds one of these (ASCII
/// case-insensitive): ntfy's `auth`, the `token`, `key`, `secret`, `password`, `signature` of
/// hosted receivers (and so `access_token`, `api_key`, `sig` too).
const SECRET_QUERY_WORDS: &[&str] = &["auth", "token", "key", "secret", "pass", "sig"];

/// A receiver's or push's URL as it may be printed or stored for display: the password of its
/// user info as `user:***@` (a user alone, which may be a token, as `***@`), the value of
/// every query parameter named like a secret ([`SECRET_QUERY_WORDS`]) as `***`.
pub(crate) fn redact(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (format!("{s}://"), r),
        None => (String::new(), url),
    };
    let auth_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(auth_end);
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _)) => format!("{name}:***@{host}"),
            None => format!("***@{host}"),
        },
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let (query, frag) = query
                .split_once('#')
                .map_or((query, None), |(q, f)| (q, Some(f)));
            let params: Vec<String> = query
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, _))
                        if SECRET_QUERY_WORDS
                            .iter()
                            .any(|w| k.to_ascii_lowercase().contains(w)) =>
                    {
                        format!("{k}=***")
                    }
                    _ => kv.to_string(),
                })
                .collect();
            let frag = frag.map_or(String::new(), |f| format!("#{f}"));
            format!("{path}?{}{frag}", params.join("&"))
        }
        None => tail.to_string(),
    };
    format!("{scheme}{authority}{tail}")
}

/// The part of a URL with a scheme after `://`.
pub(crate) fn after_scheme(url: &str) -> &str {
    url.split_once("://").map_or(url, |(_, rest)| rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_of_urls_are_redacted() {
        for (url, want) in [
            ("https://u:hunter2@ntfy.sh/t", "https://u:***@ntfy.sh/t"),
            ("https://tok123@h/x", "https://***@h/x"),
            ("http://h/x?token=abc&a=1", "http://h/x?token=***&a=1"),
            (
                "https://ntfy.sh/t?auth=QmFzaWM#f",
                "https://ntfy.sh/t?auth=***#f",
            ),
            (
                "http://h:8428/api?Access_Token=z&api_key=y",
                "http://h:8428/api?Access_Token=***&api_key=***",
            ),
            ("http://a:b@h?sig=1", "http://a:***@h?sig=***"),
            ("http://127.0.0.1:8428", "http://127.0.0.1:8428"),
            ("http://h/p@q?x=1", "http://h/p@q?x=1"),
        ] {
            assert_eq!(redact(url), want, "{url}");
        }
    }

    #[test]
    fn urls_take_http_and_https_and_refuse_other_schemes() {
        assert_eq!(url_with_scheme("--x", "h:1").unwrap(), "http://h:1");
        assert_eq!(
            url_with_scheme("--x", " https://h/p ").unwrap(),
            "https://h/p"
        );
        assert_eq!(url_with_scheme("--x", "http://h").unwrap(), "http://h");
        let e = url_with_scheme("--x", "ftp://h").unwrap_err();
        assert!(e.contains("\"ftp\""), "{e}");
        assert_eq!(after_scheme("https://h:1/a"), "h:1/a");
        assert_eq!(after_scheme("h:1"), "h:1");
    }

    #[test]
    fn a_ca_file_without_certificates_is_refused_by_name() {
        let p = Path::new("/x/ca.pem");
        let e = Trust::from_pem(p, b"hello\n").unwrap_err().to_string();
        assert!(
            e.contains("/x/ca.pem") && e.contains("no certificate"),
            "{e}"
        );
        let key =
            b"-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIBzs\n-----END PRIVATE KEY-----\n";
        let e = Trust::from_pem(p, key).unwrap_err().to_string();
        assert!(e.contains("no certificate") || e.contains("not PEM"), "{e}");
        let bad = b"-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n";
        let e = Trust::from_pem(p, bad).unwrap_err().to_string();
        assert!(e.contains("not PEM"), "{e}");
    }
}
